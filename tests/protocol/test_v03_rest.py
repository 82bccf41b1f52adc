"""A2A 0.3's HTTP+JSON codec on its own (protocol/v03_rest.py): a body nested
past what Python's stack holds is the caller's InvalidParamsError, said as
``decode_params`` says it, not a RecursionError from the key conversion (the
server refuses such a body before: tests/server/test_rest_params.py)."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest

from a2ad.protocol.errors import InvalidParamsError
from a2ad.protocol.v03_rest import V03Rest

DEEP_LIST = b"[" * 900 + b"]" * 900


@pytest.mark.parametrize(
    ("decode", "body"),
    [
        (V03Rest.decode_send, b'{"message":' + DEEP_LIST + b"}"),
        (V03Rest.decode_push_config, b'{"taskId":"t","config":' + DEEP_LIST + b"}"),
    ],
    ids=["send", "push config"],
)
def test_a_body_nested_past_the_stack_is_invalid_params(
    decode: Callable[[msgspec.Raw, str], object], body: bytes
) -> None:
    with pytest.raises(InvalidParamsError, match="nested too deeply to process"):
        decode(msgspec.Raw(body), "POST /v1/message:send")
