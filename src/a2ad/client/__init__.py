"""The client side of a2ad: talk to any A2A server, in 1.0 or 0.3."""

from .client import DEFAULT_URL, Client, ClientError, RemoteError, StreamEvent, SyncClient

__all__ = ["DEFAULT_URL", "Client", "ClientError", "RemoteError", "StreamEvent", "SyncClient"]
