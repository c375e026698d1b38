"""The shared LRU map: a hit is not made again, and the least recently used goes first."""

from __future__ import annotations

from fleetscope.lib.lru import LruCache


def test_a_key_is_made_once_and_then_served_from_the_cache() -> None:
    cache: LruCache[str, int] = LruCache(4)
    made: list[str] = []

    def make(key: str) -> int:
        made.append(key)
        return len(key)

    assert cache.get_or_make("abc", lambda: make("abc")) == 3
    assert cache.get_or_make("abc", lambda: make("abc")) == 3
    assert made == ["abc"]


def test_the_least_recently_used_entry_is_dropped_past_the_bound() -> None:
    cache: LruCache[int, int] = LruCache(2)
    cache.get_or_make(1, lambda: 10)
    cache.get_or_make(2, lambda: 20)
    cache.get_or_make(1, lambda: -1)  # used again: 2 is now the oldest
    cache.get_or_make(3, lambda: 30)
    assert len(cache) == 2
    assert cache.get_or_make(1, lambda: -1) == 10
    assert cache.get_or_make(2, lambda: 22) == 22  # made again: it was dropped
