"""A Bloom filter of message keys: "certainly never seen" without a lookup.

Every send asks the store whether its message was sent before, and nearly
always it was not. The SQLite store, while this process is the file's only
server (it holds the serving lock), keeps every key it stores in this filter,
and answers "no" from it without touching the database: a lookup on its own
connection cost about 25 µs a send, mostly re-reading pages after the worker's
commits. A "maybe" (every key seen, and about 2% of others at a million keys in
the default 1 MiB) is looked up.

Keys are SHA-256 prefixes, uniformly random, so four 32-bit slices of the key
serve as the four hash functions. Keys are never removed (a deleted task's key
stays a "maybe"); the filter is rebuilt from the file at each start.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["KeyFilter"]

_MIN_BITS = 1 << 23  # 1 MiB


class KeyFilter:
    def __init__(self, keys: Iterable[bytes] = (), *, expected: int = 0) -> None:
        bits = _MIN_BITS
        while bits < 16 * expected:  # about 0.2% false "maybe" at the expected count
            bits <<= 1
        self._bits = bytearray(bits // 8)
        self._mask = bits - 1
        for key in keys:
            self.add(key)

    def _slots(self, key: bytes) -> tuple[int, int, int, int]:
        mask = self._mask
        return (
            int.from_bytes(key[0:4]) & mask,
            int.from_bytes(key[4:8]) & mask,
            int.from_bytes(key[8:12]) & mask,
            int.from_bytes(key[12:16]) & mask,
        )

    def add(self, key: bytes) -> None:
        bits = self._bits
        for slot in self._slots(key):
            bits[slot >> 3] |= 1 << (slot & 7)

    def __contains__(self, key: bytes) -> bool:
        bits = self._bits
        return all(bits[slot >> 3] & (1 << (slot & 7)) for slot in self._slots(key))
