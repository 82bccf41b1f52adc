"""Checks on requests that the wire types cannot express, done once as they are
decoded, so the engine receives requests that are already valid: context ids, how
deep a message's free-form JSON nests, ListTasks' state, timestamp and page token
(an opaque cursor, base64 of JSON), and a push-notification config's URL and
header values. (Where a webhook's URL may point, which needs DNS, is checked by
the engine: engine/webhook_urls.py.)"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import msgspec
from msgspec import UNSET, UnsetType

from .errors import InvalidParamsError
from .model import (
    MAX_AUTH_CREDENTIALS_LENGTH,
    MAX_ID_LENGTH,
    MAX_JSON_DEPTH,
    MAX_PUSH_TOKEN_LENGTH,
    HistoryLength,
    ListTasksRequest,
    SendMessageRequest,
    TaskPushNotificationConfig,
    TaskState,
    parse_state,
    parse_timestamp,
)
from .types import Cursor, format_timestamp

__all__ = [
    "TaskQuery",
    "checked_push_config",
    "checked_send",
    "decode_page_token",
    "encode_page_token",
    "normalized_time",
    "task_query",
]


class TaskQuery(NamedTuple):
    """A ListTasks request, checked: what the engine lists by."""

    page_size: int = 50
    context_id: str = ""
    state: TaskState | None = None
    updated_after: str = ""  # normalized timestamp text; "" for no bound
    updated_before: str = ""  # likewise; an a2ad extension (statusTimestampBefore)
    cursor: Cursor | None = None
    history_length: HistoryLength | UnsetType = UNSET
    include_artifacts: bool = False
    overdue: bool = False  # a2ad extension: only tasks past their deadline
    tenant: str = ""


def task_query(request: ListTasksRequest) -> TaskQuery:
    state = None
    if request.status:
        try:
            state = parse_state(request.status)
        except ValueError as exc:
            raise InvalidParamsError(f"Invalid status: {exc}", field="status") from None
    after = ""
    if request.status_timestamp_after:
        after = normalized_time(request.status_timestamp_after, "statusTimestampAfter")
    before = ""
    if request.status_timestamp_before:
        before = normalized_time(request.status_timestamp_before, "statusTimestampBefore")
    return TaskQuery(
        page_size=request.page_size,
        context_id=request.context_id,
        state=state,
        updated_after=after,
        updated_before=before,
        cursor=decode_page_token(request.page_token) if request.page_token else None,
        history_length=request.history_length,
        include_artifacts=request.include_artifacts,
        overdue=request.overdue,
        tenant=request.tenant,
    )


def checked_send(
    request: SendMessageRequest,
    params: msgspec.Raw,
    *,
    method: str,
    push_field: str,
    scheme_field: str = "authentication.scheme",
) -> SendMessageRequest:
    """``request``, decoded from ``params``, once it passed the checks its type
    cannot express; raises InvalidParamsError naming the field. ``push_field`` is
    where the request's dialect carries a push-notification config, to name it
    (and ``scheme_field`` its authentication scheme, as ``checked_push_config``)."""
    message = request.message
    context_id = message.context_id
    if context_id and (len(context_id) > MAX_ID_LENGTH or not context_id.isprintable()):
        raise InvalidParamsError(
            f"message.contextId must be 1..{MAX_ID_LENGTH} printable characters",
            field="message.contextId",
        )
    config = request.configuration
    if config is not UNSET and config.task_push_notification_config is not UNSET:
        checked_push_config(
            config.task_push_notification_config,
            method=method,
            field=push_field,
            scheme_field=scheme_field,
        )
    # Nesting past MAX_JSON_DEPTH takes more opening brackets than that (those in
    # strings count too; the walk then decides): most messages skip the walk.
    text = bytes(params)
    if text.count(b"{") + text.count(b"[") > MAX_JSON_DEPTH:
        _check_nesting(request)
    return request


def checked_push_config(
    config: TaskPushNotificationConfig,
    *,
    method: str,
    field: str,
    scheme_field: str = "authentication.scheme",
) -> TaskPushNotificationConfig:
    """``config``, or InvalidParamsError: its URL is not an absolute http(s) URL
    with a host, or a value sent as a header holds a control character.
    ``field`` is where the dialect carries the config ("" at the top), and
    ``scheme_field`` where, in it, the authentication scheme is."""
    at = f"{field}." if field else ""
    url = config.url
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a port that is not one)
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme.lower() not in ("http", "https")
        or not parts.hostname
        or not url.isprintable()
        or " " in url
    ):
        raise InvalidParamsError(
            f"{method}: `{at}url` must be an absolute http:// or https:// URL with a host, "
            f"not {url[:200]!r}",
            field=f"{at}url",
        )
    if parts.username is not None:
        raise InvalidParamsError(
            f"{method}: `{at}url` must not carry a user name or password; put the receiver's "
            f"credentials in `{at}authentication` (or its token in `{at}token`)",
            field=f"{at}url",
        )
    auth = config.authentication
    for name, value, limit in (
        ("token", config.token, MAX_PUSH_TOKEN_LENGTH),
        (scheme_field, "" if auth is UNSET else auth.scheme, None),
        (
            "authentication.credentials",
            "" if auth is UNSET else auth.credentials,
            MAX_AUTH_CREDENTIALS_LENGTH,
        ),
    ):
        if limit is not None and len(value) > limit:
            raise InvalidParamsError(
                f"{method}: `{at}{name}` is {len(value)} characters long; at most {limit} "
                "are accepted",
                field=f"{at}{name}",
            )
        if not (value.isascii() and value.isprintable()):
            raise InvalidParamsError(
                f"{method}: `{at}{name}` is sent as an HTTP header value: use printable ASCII "
                "only (no line break or other control character)",
                field=f"{at}{name}",
            )
    if auth is not UNSET and " " in auth.scheme:
        raise InvalidParamsError(
            f"{method}: `{at}{scheme_field}` must be one word, such as Bearer or Basic, "
            f"not {auth.scheme!r}",
            field=f"{at}{scheme_field}",
        )
    return config


def _check_nesting(request: SendMessageRequest) -> None:
    message = request.message
    for value, field in ((request.metadata, "metadata"), (message.metadata, "message.metadata")):
        if isinstance(value, _NESTED) and _too_deep(value):
            raise _deep(field)
    for i, part in enumerate(message.parts):
        for value, name in ((part.data, "data"), (part.metadata, "metadata")):
            if isinstance(value, _NESTED) and _too_deep(value):
                raise _deep(f"message.parts[{i}].{name}")


_NESTED = (dict, list)  # a tuple: isinstance takes it faster than `dict | list`


def _too_deep(value: dict[str, Any] | list[Any]) -> bool:
    """Whether ``value`` nests lists and objects more than MAX_JSON_DEPTH deep
    (``{"a": [1]}`` is 2 deep); walked level by level, containers only."""
    level = [value]
    for _ in range(MAX_JSON_DEPTH):
        deeper = []
        for container in level:
            for child in container.values() if isinstance(container, dict) else container:
                if isinstance(child, _NESTED):
                    deeper.append(child)
        if not deeper:
            return False
        level = deeper
    return True


def _deep(field: str) -> InvalidParamsError:
    return InvalidParamsError(
        f"`{field}` nests more than {MAX_JSON_DEPTH} levels of lists and objects, more than "
        "A2A clients can read back; flatten it",
        field=field,
    )


def normalized_time(text: str, field: str) -> str:
    """RFC 3339 ``text`` as the stores' timestamp text (UTC, ms, ``Z``); raises
    InvalidParamsError naming ``field``."""
    moment = parse_timestamp(text)
    try:
        if moment is None:
            raise ValueError(text)
        moment = moment.astimezone(UTC)  # OverflowError past year 9999 or before year 1
        # ValueError for a moment that rounds to the millisecond into year 10000.
        return format_timestamp(moment.timestamp())
    except (ValueError, OverflowError):
        raise InvalidParamsError(
            f"Invalid {field} {text!r}: use an RFC 3339 time such as 2026-11-30T10:00:00Z",
            field=field,
        ) from None


def encode_page_token(cursor: Cursor) -> str:
    return base64.urlsafe_b64encode(msgspec.json.encode(list(cursor))).decode().rstrip("=")


_cursor_decoder = msgspec.json.Decoder(tuple[str, str])


def decode_page_token(token: str) -> Cursor:
    try:
        padded = token + "=" * (-len(token) % 4)
        return _cursor_decoder.decode(base64.urlsafe_b64decode(padded))
    except (binascii.Error, ValueError, msgspec.DecodeError):
        raise InvalidParamsError(
            "Invalid pageToken: pass back a nextPageToken this server returned, or omit it "
            "to start from the first page",
            field="pageToken",
        ) from None
