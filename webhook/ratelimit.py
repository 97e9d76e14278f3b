"""A bound on how fast something may happen per key (a namespace): a token bucket each.

The webhook creates claim templates with cluster-wide rights on behalf of whoever sent the review;
this keeps a flood of forged or pathological reviews from filling a namespace with objects.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Callable

# Buckets kept at most; the least recently used go first (a full bucket is the same as none).
MAX_KEYS = 4096


class PerKeyRate:
    """At most ``per_minute`` events per key in any minute, and as many at once."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self.clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, when)

    def take(self, key: str) -> bool:
        """Spend one event for ``key``; False when its bucket is empty."""
        now = self.clock()
        tokens, when = self._buckets.pop(key, (float(self.per_minute), now))
        tokens = min(float(self.per_minute), tokens + (now - when) * self.per_minute / 60.0)
        allowed = tokens >= 1.0
        self._buckets[key] = (tokens - 1.0 if allowed else tokens, now)
        if len(self._buckets) > MAX_KEYS:
            self._buckets.popitem(last=False)
        return allowed

    def retry_after(self, key: str) -> float:
        """Seconds until ``key`` may have one more event."""
        tokens, when = self._buckets.get(key, (float(self.per_minute), self.clock()))
        tokens = min(float(self.per_minute), tokens + (self.clock() - when) * self.per_minute / 60.0)
        return max(0.0, (1.0 - tokens) * 60.0 / self.per_minute)
