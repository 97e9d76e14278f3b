"""One API round trip for many reviews that need the same answer at the same time.

The pods of a rollout reach admission together and all ask for the same namespace labels and
the same claim template; the first asks the API server, the others wait for its answer.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SingleFlight(Generic[K, V]):
    def __init__(self) -> None:
        self._running: dict[K, asyncio.Future[V]] = {}

    async def run(self, key: K, work: Callable[[], Awaitable[V]]) -> V:
        """``await work()``, unless a call for ``key`` is already running: then its result (or
        its exception).  The work runs in a task of its own: a caller that gives up (its review's
        deadline) cancels neither the work nor the others waiting for it."""
        running = self._running.get(key)
        if running is None:
            running = self._running[key] = asyncio.ensure_future(work())
            running.add_done_callback(lambda done: self._finished(key, done))
        return await asyncio.shield(running)

    def _finished(self, key: K, done: "asyncio.Future[V]") -> None:
        if self._running.get(key) is done:
            del self._running[key]
        if not done.cancelled():
            done.exception()  # consumed: the waiters re-raise it; with none left nobody must log it
