"""The SQLite store's filter of message keys: never a false "no", few false "maybe"."""

from __future__ import annotations

import hashlib

from a2ad.store.key_filter import KeyFilter


def key(n: int) -> bytes:
    return hashlib.sha256(str(n).encode()).digest()[:16]


def test_every_key_added_is_in_the_filter() -> None:
    keys = [key(n) for n in range(20_000)]
    built = KeyFilter(keys[:10_000], expected=10_000)
    for k in keys[10_000:]:
        built.add(k)
    assert all(k in built for k in keys)


def test_few_other_keys_are_maybe_at_the_expected_count() -> None:
    built = KeyFilter((key(n) for n in range(100_000)), expected=100_000)
    others = [key(n) for n in range(100_000, 120_000)]
    false_maybes = sum(k in built for k in others)
    assert false_maybes < 0.01 * len(others)  # about 0.2% expected at 16 bits a key


def test_a_filter_for_more_keys_is_bigger() -> None:
    assert len(KeyFilter(expected=10_000_000)._bits) > len(KeyFilter()._bits)
