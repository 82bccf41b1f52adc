"""The client's public names where they were first written (``a2ad.client.client``):
the async ``Client`` and its errors (``operations.py``, ``errors.py``) and the
blocking ``SyncClient`` (``sync.py``). ``a2ad.client`` exports the same."""

from __future__ import annotations

from .errors import ClientError, RemoteError
from .operations import DEFAULT_URL, Client, StreamEvent
from .sync import SyncClient

__all__ = ["DEFAULT_URL", "Client", "ClientError", "RemoteError", "StreamEvent", "SyncClient"]
