"""What a queued turn carries besides the stored task: a ``TurnOrder``.

A front (queued_turns.py) encodes it with the turn it queues; the worker that
takes the turn decodes it and runs the turn as the front would have
(local_turns.py ``run_claimed``): the agent gets the request's metadata and its
``RequestContext`` (the agent's ``ctx.request``)."""

from __future__ import annotations

from typing import Any

import msgspec

from ..agent import RequestContext

__all__ = ["TurnOrder", "decode_order", "encode_order"]


class TurnOrder(msgspec.Struct, frozen=True, kw_only=True):
    """What a worker needs to run a queued turn, besides the stored task."""

    metadata: dict[str, Any] = {}
    request: RequestContext = RequestContext()


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(TurnOrder).decode


def encode_order(metadata: dict[str, Any], request: RequestContext) -> bytes:
    return _encode(TurnOrder(metadata=metadata, request=request))


def decode_order(data: bytes) -> TurnOrder:
    """Raises msgspec.DecodeError for what is not a TurnOrder."""
    return _decode(data)
