"""The server's configurable bounds on what a caller may send and hold.

``Limits`` is the configuration (``create_app``'s and ``a2ad serve``'s): the
request body, a message's parts and each part's size, and per caller the open
streams and the requests per second. The bounds that reach tasks (history,
artifacts, in-flight tasks per principal) are the engine's (engine/config.py
``EngineConfig``). Every refusal names the limit, its value and how to change it;
a refused request is refused before it reaches the engine, so it stores nothing.

Per-caller state: ``StreamSlots`` counts open streams per principal, and
``RateLimiter`` keeps a token bucket per principal (an anonymous caller's is its
remote address's). Both are O(1) per request.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import msgspec
from msgspec import UNSET

from ..agent import Caller
from ..protocol.errors import A2AError, InvalidParamsError, InvalidRequestError, QuotaExceededError
from ..protocol.model import MAX_PARTS, Message
from ..wording import plural
from .request import Peer

__all__ = [
    "MAX_BODY_BYTES",
    "Limits",
    "RateLimiter",
    "StreamSlots",
    "body_too_large",
    "caller_key",
    "check_message",
    "refusal",
    "retry_headers",
]

MAX_BODY_BYTES = 10 * 1024 * 1024
MAX_PART_BYTES = 1024 * 1024
_IDLE_BUCKETS = 10_000  # past this many buckets, full (idle) ones are forgotten
_MAX_BUCKETS = 100_000  # past this many, the least recently used go, full or not


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """What the server bounds before a request reaches the engine; 0 means
    unlimited for the per-principal ones. ``max_parts`` may be at most MAX_PARTS
    (the decoders' hard bound). Raises ValueError, naming the limit, for one
    out of its range."""

    max_body_bytes: int = MAX_BODY_BYTES
    max_parts: int = 256
    max_part_bytes: int = MAX_PART_BYTES
    max_streams_per_principal: int = 0
    rate_limit: float = 0.0  # requests per second per principal
    rate_burst: int = 0  # 0: the rate rounded up (at least 1)

    def __post_init__(self) -> None:
        for name, low, high in (
            ("max_body_bytes", 1, None),
            ("max_parts", 1, MAX_PARTS),
            ("max_part_bytes", 1, None),
            ("max_streams_per_principal", 0, None),
            ("rate_burst", 0, None),
        ):
            value = getattr(self, name)
            if value < low or (high is not None and value > high):
                bound = f"{low}..{high}" if high is not None else f"at least {low}"
                raise ValueError(f"{name} must be {bound}, not {value!r}")
        if not (self.rate_limit >= 0 and math.isfinite(self.rate_limit)):
            raise ValueError(
                f"rate_limit must be 0 (off) or a positive number, not {self.rate_limit!r}"
            )


def body_too_large(limit: int) -> InvalidRequestError:
    return InvalidRequestError(
        f"Request body is larger than the limit of {plural(limit, 'byte')}; send less, "
        "or raise the limit (a2ad serve --max-body-bytes, Limits(max_body_bytes=...))",
        metadata={"limit": "maxBodyBytes", "value": str(limit)},
    )


def check_message(message: Message, limits: Limits) -> None:
    """Raise InvalidParamsError, naming the field and the limit, for a message
    with more parts than ``max_parts`` or a part larger than ``max_part_bytes``:
    a text part's UTF-8 text, a data part's JSON, a file part's raw bytes."""
    parts = message.parts
    if len(parts) > limits.max_parts:
        raise _over(
            "message.parts",
            f"has {len(parts)} parts",
            "maxParts",
            limits.max_parts,
            "part",
            "--max-parts",
        )
    cap = limits.max_part_bytes
    for i, part in enumerate(parts):
        if part.text is not UNSET:
            # A character is at most 4 bytes: short texts need no encoding.
            if len(part.text) * 4 <= cap:
                continue
            size, kind = len(part.text.encode("utf-8", "surrogatepass")), "text"
        elif part.raw is not UNSET:
            size, kind = len(part.raw), "raw"
        elif part.data is not UNSET:
            size, kind = len(msgspec.json.encode(part.data)), "data"
        else:
            continue  # a URL: bounded by its own rules
        if size > cap:
            raise _over(
                f"message.parts[{i}].{kind}",
                f"is {size} bytes",
                "maxPartBytes",
                cap,
                "byte",
                "--max-part-bytes",
            )


def _over(
    field: str, what: str, limit: str, value: int, unit: str, flag: str
) -> InvalidParamsError:
    option = "".join(w if i == 0 else w.title() for i, w in enumerate(flag[2:].split("-")))
    snake = flag[2:].replace("-", "_")
    return InvalidParamsError(
        f"`{field}` {what}, over the server's limit of {plural(value, unit)} ({option}); "
        f"send less, or ask the operator to raise it (a2ad serve {flag}, "
        f"Limits({snake}=...))",
        field=field,
        metadata={"limit": limit, "value": str(value)},
    )


def caller_key(caller: Caller, peer: Peer | None) -> str:
    """Whose quota a request counts against: its principal, or for an anonymous
    caller its remote address, from ``peer`` (every anonymous caller of one
    address is one; None: the transport does not say)."""
    if caller.authenticated:
        return f"principal:{caller.principal}"
    return f"address:{peer[0]}" if peer else "address:"


def _who(key: str) -> str:
    kind, _, name = key.partition(":")
    return f"principal {name!r}" if kind == "principal" else f"address {name or 'unknown'}"


class StreamSlots:
    """Open streams per caller, at most ``limit`` each (0: no limit)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open: dict[str, int] = {}

    def count(self, key: str) -> int:
        return self._open.get(key, 0)

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        """Hold one of ``key``'s stream slots while the block runs. Raises
        QuotaExceededError when they are all taken."""
        if not self.limit:
            yield
            return
        held = self._open.get(key, 0)
        if held >= self.limit:
            raise QuotaExceededError(
                f"{_who(key)} has {plural(held, 'stream')} open, the server's limit "
                f"(maxStreamsPerPrincipal {self.limit}); close one first, or ask the operator "
                "to raise it (a2ad serve --max-streams-per-principal)",
                metadata={
                    "quota": "maxStreamsPerPrincipal",
                    "limit": str(self.limit),
                    "count": str(held),
                },
            )
        self._open[key] = held + 1
        try:
            yield
        finally:
            left = self._open[key] - 1
            if left:
                self._open[key] = left
            else:
                del self._open[key]


class RateLimiter:
    """A token bucket per caller: ``rate`` tokens a second, holding at most
    ``burst``; a request takes one. ``clock`` is monotonic seconds."""

    def __init__(
        self, rate: float, burst: int = 0, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not rate > 0:
            raise ValueError(f"rate must be positive, not {rate!r}")
        self.rate = rate
        self.burst = burst or max(1, math.ceil(rate))
        self.clock = clock
        # key -> (tokens, at), least recently used first
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, key: str) -> None:
        """Take a token from ``key``'s bucket. Raises QuotaExceededError, whose
        ``retry_after`` says in how many whole seconds (at least 1) one is back."""
        now = self.clock()
        buckets = self._buckets
        tokens, at = buckets.get(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + max(0.0, now - at) * self.rate)
        if len(buckets) >= _IDLE_BUCKETS and key not in buckets:
            self._forget_idle(now)
        buckets[key] = (tokens - 1.0 if tokens >= 1.0 else tokens, now)
        buckets.move_to_end(key)
        if tokens >= 1.0:
            return
        wait = max(1, math.ceil((1.0 - tokens) / self.rate))
        error = QuotaExceededError(
            f"{_who(key)} is over the server's rate limit of "
            f"{plural(self.rate, 'request')} a second "
            f"(bursts of {self.burst}); retry in {wait} s, or ask the operator to raise it "
            "(a2ad serve --rate-limit, --rate-burst)",
            metadata={"quota": "rateLimit", "limit": f"{self.rate:g}", "burst": str(self.burst)},
        )
        error.retry_after = wait
        raise error

    def _forget_idle(self, now: float) -> None:
        """Drop, from the least recently used, the buckets that have refilled (they
        hold nothing a new one would not), stopping at the first that has not:
        amortised O(1) a request, where a scan of all would make a flood of new
        callers cost O(n) each. Past _MAX_BUCKETS the oldest go all the same (a
        caller forgotten so gets a fresh burst)."""
        full = float(self.burst)
        buckets = self._buckets
        while buckets:
            key, (tokens, at) = next(iter(buckets.items()))
            if tokens + (now - at) * self.rate < full and len(buckets) < _MAX_BUCKETS:
                return
            del buckets[key]


def refusal(error: A2AError) -> tuple[int, list[tuple[bytes, bytes]] | None]:
    """The HTTP status and headers of a JSON-RPC error response: 200, but 429
    (with ``Retry-After`` when known) for a spent quota or rate."""
    if not isinstance(error, QuotaExceededError):
        return 200, None
    return 429, retry_headers(error)


def retry_headers(error: QuotaExceededError) -> list[tuple[bytes, bytes]] | None:
    if error.retry_after is None:
        return None
    return [(b"retry-after", str(error.retry_after).encode())]
