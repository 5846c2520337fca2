"""A small bounded in-process cache with a time limit per entry: what the gateway keeps of
authentication and authorization answers (a flood of distinct keys evicts the oldest)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Generic, TypeVar

V = TypeVar("V")
DEFAULT_ENTRIES = 8192


class TtlCache(Generic[V]):
    """Values by key for at most their own ``ttl`` seconds, ``size`` entries (oldest out)."""

    def __init__(self, size: int = DEFAULT_ENTRIES) -> None:
        self.size = size
        self._entries: OrderedDict[object, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: object) -> V | None:
        found = self._entries.get(key)
        if found is None:
            return None
        if found[0] <= time.monotonic():
            with self._lock:
                self._entries.pop(key, None)
            return None
        return found[1]

    def put(self, key: object, value: V, ttl: float) -> None:
        if ttl <= 0:
            return
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = (time.monotonic() + ttl, value)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
