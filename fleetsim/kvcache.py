"""Shared-prefix bookkeeping for an engine's KV cache.

Tokens of a prefix that running requests use are held once, however many
requests share it. When the last user finishes, the blocks stay cached but
count as free (as in vLLM's `kv_cache_usage_perc`) until the space is needed,
then the least recently released prefix is evicted first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable


class PrefixCache:
    __slots__ = ("active", "lru", "lru_tokens")

    def __init__(self) -> None:
        self.active: dict[Hashable, list[int]] = {}  # key -> [users, tokens]
        self.lru: OrderedDict[Hashable, int] = OrderedDict()
        self.lru_tokens = 0

    def held(self, key: Hashable) -> int:
        """Tokens of `key` held by running requests (0 if none)."""
        entry = self.active.get(key)
        return entry[1] if entry else 0

    def cached(self, key: Hashable) -> int:
        """Tokens of `key` resident but unused (0 if evicted or never cached)."""
        return self.lru.get(key, 0)

    def acquire(self, key: Hashable, tokens: int) -> None:
        entry = self.active.get(key)
        if entry is not None:
            entry[0] += 1
            return
        kept = self.lru.pop(key, None)
        if kept is not None:
            self.lru_tokens -= kept
            tokens = kept
        self.active[key] = [1, tokens]

    def release(self, key: Hashable, *, keep: bool) -> int:
        """Drop one user of `key`; returns the tokens no longer held by running requests."""
        entry = self.active[key]
        entry[0] -= 1
        if entry[0]:
            return 0
        del self.active[key]
        if keep:
            self.put(key, entry[1])
        return entry[1]

    def put(self, key: Hashable, tokens: int) -> None:
        if tokens <= 0:
            return
        old = self.lru.pop(key, None)
        if old is not None:
            self.lru_tokens -= old
        self.lru[key] = tokens
        self.lru_tokens += tokens

    def take(self, key: Hashable) -> int:
        tokens = self.lru.pop(key, 0)
        self.lru_tokens -= tokens
        return tokens

    def fit(self, free_tokens: float) -> None:
        """Evict least recently used prefixes until the cached ones fit in the free space."""
        lru = self.lru
        while self.lru_tokens > free_tokens and lru:
            _, tokens = lru.popitem(last=False)
            self.lru_tokens -= tokens
