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
        its exception).  A waiter that is cancelled does not cancel the work others wait for."""
        running = self._running.get(key)
        if running is not None:
            return await asyncio.shield(running)
        future: asyncio.Future[V] = asyncio.get_running_loop().create_future()
        self._running[key] = future
        try:
            value = await work()
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # consumed: the waiters re-raise it, nobody else must log it
            raise
        else:
            future.set_result(value)
            return value
        finally:
            del self._running[key]
