"""The per-process cache of decompressed frame values behind `store.frame_blocks`:
`FrameValuesCache` (one, `FRAME_CACHE`) and `with_values`, which fills a read's rows from
it, fetching by pk only the values it lacks."""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Mapping

from inventory.models import SampleFrame
from inventory.store.rows import BlockRows, FrameKey, ValueRows


class FrameValuesCache:
    """Decompressed values vectors by frame key, least recently used first, bounded in
    bytes. Web threads and the scheduler share one: its bookkeeping happens under a lock,
    fetching and decompressing outside it."""

    # Roughly what CPython spends on an entry besides the values (bytes header, key tuple
    # and its ints, the ordered dict's node): it keeps the bound honest for narrow layouts.
    ENTRY_OVERHEAD = 200

    def __init__(self) -> None:
        self._entries: OrderedDict[FrameKey, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def take(self, keys: Iterable[FrameKey]) -> dict[FrameKey, bytes]:
        """The cached values of these keys, each marked as just used."""
        found = {}
        with self._lock:
            entries = self._entries
            for key in keys:
                values = entries.get(key)
                if values is not None:
                    entries.move_to_end(key)
                    found[key] = values
        return found

    def keep(self, values_by_key: Mapping[FrameKey, bytes], limit: int) -> None:
        """Cache these values, then drop the least recently used until `limit` bytes hold
        the rest."""
        with self._lock:
            entries = self._entries
            for key, values in values_by_key.items():
                old = entries.pop(key, None)
                if old is not None:  # two threads fetched the same frame
                    self._bytes -= len(old) + self.ENTRY_OVERHEAD
                cost = len(values) + self.ENTRY_OVERHEAD
                if cost <= limit:
                    entries[key] = values
                    self._bytes += cost
            while self._bytes > limit:
                _, values = entries.popitem(last=False)
                self._bytes -= len(values) + self.ENTRY_OVERHEAD

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


FRAME_CACHE = FrameValuesCache()
FETCH_CHUNK = 500  # pks per query for the values the cache lacks


def with_values(rows: BlockRows, limit: int) -> ValueRows:
    """`rows` with each frame key replaced by that frame's decompressed values: from the
    cache, or fetched by pk in chunks, decompressed and cached (`limit`: the cache's bound
    in bytes).

    Frames written before tokens (token 0) are never cached, as their pk alone might name
    another frame after a rollback; they come here as values already (their listing
    brings theirs along), and retention drops them from the store in time."""
    keys = [key for _, chunks in rows.values() for key in chunks if isinstance(key, tuple)]
    found = FRAME_CACHE.take(keys)
    # A warm read misses a few frames of thousands: what it costs is its passes over every
    # key, so only the take and the final one go over them all.
    if len(found) < len(keys):
        missing = [key for key in keys if key not in found]
        pks = sorted(pk for pk, _ in missing)
        fetched: dict[FrameKey, bytes] = {}
        for i in range(0, len(pks), FETCH_CHUNK):
            blobs = SampleFrame.objects.filter(pk__in=pks[i : i + FETCH_CHUNK]).values_list(
                "pk", "token", "values_blob"
            )
            fetched.update(((pk, token), zlib.decompress(blob)) for pk, token, blob in blobs)
        # In span order, not in whatever order the fetch returned them: which frames a span
        # larger than the bound leaves cached is then predictable (the last ones read). A
        # fetched key the span did not name (its pk now holds another frame) is dropped.
        named = {key: fetched[key] for key in missing if key in fetched}
        FRAME_CACHE.keep({key: values for key, values in named.items() if key[1]}, limit)
        found.update(named)
    whole = len(found) == len(keys)  # one key a frame: no two alike
    complete: ValueRows = {}
    for block_key, (micro_list, chunks) in rows.items():
        if not whole and chunks:
            # A frame deleted between the two queries (retention, its endpoint removed), or
            # whose pk now names another frame (the token differs), is left out as a read a
            # moment later would leave it; its micros go too: a block keeps one row a frame.
            pairs = [
                (micro, c)
                for micro, c in zip(micro_list, chunks, strict=True)
                if not isinstance(c, tuple) or c in found
            ]
            if not pairs:
                continue
            micro_list, chunks = [micro for micro, _ in pairs], [c for _, c in pairs]
        complete[block_key] = (
            micro_list,
            [found[c] if isinstance(c, tuple) else c for c in chunks],
        )
    return complete
