"""A webhook's secrets at rest: its token and credentials, encrypted with the server's key.

Only the push layer sees them in clear: ``seal`` encrypts a config's ``token``
and ``authentication.credentials`` before it reaches the store, ``reveal``
decrypts them for a delivery, and ``mask`` hides them in every answer. So a copy
of the database file holds neither, and no caller reads them back.

A sealed value is ``a2ad:enc:v1:`` and the base64 of a random 12-byte nonce
followed by the AES-256-GCM ciphertext and tag. The field's name and the config's
URL are its associated data: a sealed value moved to another field or config,
or a URL changed in the file, does not decrypt. A value without the prefix was
stored by an a2ad from before encryption, and is used as it is.

The key is 32 bytes: a file's (``a2ad serve --secret-key-file``, by default
``<database>-a2ad.key`` beside a SQLite file, made on first start), or for a
store that keeps nothing past the process, a random one.
"""

from __future__ import annotations

import base64
import binascii
import os

import msgspec
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from msgspec import UNSET

from ..protocol.model import TaskPushNotificationConfig

__all__ = [
    "KEY_BYTES",
    "KeyFileError",
    "SecretsUnreadable",
    "WebhookSecrets",
    "key_file_for",
    "mask",
    "random_key",
    "read_or_create_key",
    "server_key",
]

KEY_BYTES = 32
PREFIX = "a2ad:enc:v1:"
_NONCE_BYTES = 12
SHOWN = 4  # trailing characters a masked value keeps, if it is long enough
MASKED_FROM = 12  # a value shorter than this is masked whole


class KeyFileError(Exception):
    """The key file can't be read or made, or holds no key of the right size."""


class SecretsUnreadable(Exception):
    """A stored secret does not decrypt with this server's key."""


class WebhookSecrets:
    """Seals and reveals the secrets of push configs with ``key`` (32 bytes)."""

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise ValueError(f"the server key must be {KEY_BYTES} bytes, not {len(key)}")
        self._aead = AESGCM(key)

    def seal(self, config: TaskPushNotificationConfig) -> TaskPushNotificationConfig:
        """``config`` with its token and credentials encrypted (empty ones stay empty)."""
        auth = config.authentication
        if auth is not UNSET and auth.credentials:
            auth = msgspec.structs.replace(
                auth, credentials=self._seal(auth.credentials, "credentials", config.url)
            )
        token = self._seal(config.token, "token", config.url) if config.token else ""
        return msgspec.structs.replace(config, token=token, authentication=auth)

    def reveal(self, config: TaskPushNotificationConfig) -> TaskPushNotificationConfig:
        """``config`` with its token and credentials in clear. Raises
        SecretsUnreadable if they were sealed with another key (or altered)."""
        auth = config.authentication
        if auth is not UNSET and auth.credentials:
            auth = msgspec.structs.replace(
                auth, credentials=self._reveal(auth.credentials, "credentials", config.url)
            )
        token = self._reveal(config.token, "token", config.url)
        return msgspec.structs.replace(config, token=token, authentication=auth)

    def masked(self, config: TaskPushNotificationConfig) -> TaskPushNotificationConfig:
        """``config`` as a caller may read it: token and credentials masked
        (``mask``); one that does not decrypt is masked whole."""
        auth = config.authentication
        if auth is not UNSET and auth.credentials:
            auth = msgspec.structs.replace(
                auth, credentials=self._masked(auth.credentials, "credentials", config.url)
            )
        token = self._masked(config.token, "token", config.url)
        return msgspec.structs.replace(config, token=token, authentication=auth)

    def _seal(self, value: str, field: str, url: str) -> str:
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, value.encode(), _associated(field, url))
        return PREFIX + base64.b64encode(nonce + sealed).decode("ascii")

    def _reveal(self, value: str, field: str, url: str) -> str:
        if not value.startswith(PREFIX):
            return value  # stored in clear, by an a2ad from before encryption
        try:
            raw = base64.b64decode(value[len(PREFIX) :], validate=True)
            nonce, sealed = raw[:_NONCE_BYTES], raw[_NONCE_BYTES:]
            return self._aead.decrypt(nonce, sealed, _associated(field, url)).decode()
        except (binascii.Error, InvalidTag, UnicodeDecodeError, ValueError):
            raise SecretsUnreadable(
                "can't decrypt the webhook's credentials: the server key changed (or the "
                "stored config was altered); set the config again, or serve with the key "
                "file it was set under"
            ) from None

    def _masked(self, value: str, field: str, url: str) -> str:
        try:
            return mask(self._reveal(value, field, url))
        except SecretsUnreadable:
            return "****"


def mask(value: str) -> str:
    """``****`` and the last four characters of ``value`` if it has at least
    twelve, else ``****``; an empty value stays empty."""
    if not value:
        return ""
    return "****" + (value[-SHOWN:] if len(value) >= MASKED_FROM else "")


def _associated(field: str, url: str) -> bytes:
    return f"a2ad webhook {field}\0{url}".encode()


def key_file_for(database: str) -> str:
    """Where a SQLite file's key is kept by default: beside it."""
    return f"{database}-a2ad.key"


def server_key(store: object, key_file: str | None = None) -> bytes:
    """The key for ``store``'s webhook secrets: ``key_file``'s; else, for a store
    with a file (a ``path``), the key file beside it; else a random key, for a
    store that keeps nothing past this process (one without ``durable``).
    Raises KeyFileError, also for a durable store with no file of its own (a
    database server), whose instances must all be given the same key file."""
    if key_file is None:
        database = getattr(store, "path", None)
        if isinstance(database, str):
            key_file = key_file_for(database)
        elif getattr(store, "durable", False):
            where = getattr(store, "where", "a database server")  # "PostgreSQL at host:port"
            raise KeyFileError(
                f"a store on {where} needs --secret-key-file PATH (or A2AD_SECRET_KEY_FILE): "
                "the webhook credentials it keeps are encrypted with a key that every a2ad "
                "instance using it must share. Give each instance the same file; a missing "
                "file is made with a new key"
            )
        else:
            return random_key()
    return read_or_create_key(key_file)


def random_key() -> bytes:
    return AESGCM.generate_key(bit_length=8 * KEY_BYTES)


def read_or_create_key(path: str) -> bytes:
    """The key in the file at ``path``; a missing file is made, readable by its
    owner only (0600), with a new random key. Raises KeyFileError naming the file."""
    try:
        with open(path, "rb") as file:
            key = file.read(KEY_BYTES + 1)
    except FileNotFoundError:
        return _create_key(path)
    except OSError as exc:
        raise KeyFileError(f"can't read the secret key file {path}: {exc.strerror}") from None
    if len(key) != KEY_BYTES:
        raise KeyFileError(
            f"the secret key file {path} must hold exactly {KEY_BYTES} bytes, not "
            f"{'more' if len(key) > KEY_BYTES else len(key)}; restore the file this server "
            "was set up with, or move it away to start with a new key (webhook credentials "
            "stored under the old one are then lost)"
        )
    return key


def _create_key(path: str) -> bytes:
    """Write a new key to a temporary file, then link it into place: another
    process never reads a partial key, and of two made at once, one wins."""
    key = random_key()
    partial = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, key)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(partial, path)
        except FileExistsError:
            return read_or_create_key(path)
        _sync_directory(os.path.dirname(path) or ".")
    except OSError as exc:
        folder = os.path.dirname(os.path.abspath(path))
        raise KeyFileError(
            f"can't create the secret key file {path} ({exc.strerror}); check that "
            f"{folder!r} exists and this user may write to it"
        ) from None
    finally:
        try:
            os.unlink(partial)
        except OSError:
            pass
    return key


def _sync_directory(directory: str) -> None:
    # The key must outlive a power cut as surely as the configs sealed with it.
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
