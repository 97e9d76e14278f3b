"""List, then watch: a local copy of one collection that the API server's change stream keeps true.

This is client-go's reflector (tools/cache/reflector.go, `ListAndWatch`) in a few lines, as kopf
and kr8s watch in Python:

* list the collection (paginated, lists.py) and keep the list's resourceVersion;
* watch from that version with `allowWatchBookmarks`; every event, BOOKMARK included, moves the
  version on, so the next watch neither replays nor misses anything;
* a watch that ends (its `timeoutSeconds`, a server restart) is started again from that version;
* 410 Gone (the history was compacted past that version, the Kubernetes API concepts page,
  "Efficient detection of changes"): list again and replace the copy; objects the new list lacks
  are reported deleted (as DeltaFIFO.Replace does);
* any other failure: list again after a backoff that doubles up to a cap (the reflector's
  backoff manager); meanwhile the copy stays as last known and `current` is False, so a caller
  that must not act on a stale answer asks the API server itself.

Objects are the API's dicts, keyed by (namespace, name).
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import TYPE_CHECKING, Any, Callable, Iterator

from kubectl_gpu.k8s.errors import ApiError
from kubectl_gpu.k8s.lists import DEFAULT_PAGE_SIZE, read_snapshot

if TYPE_CHECKING:
    from kubectl_gpu.k8s.client import AsyncClient

Key = tuple[str, str]
# (type, object): ADDED | MODIFIED | DELETED, after the copy has changed.
OnChange = Callable[[str, dict[str, Any]], None]

log = logging.getLogger("kubectl_gpu.k8s.watch")

# client-go's reflector asks for a random watch timeout between 5 and 10 minutes (minWatchTimeout
# times 1 to 2), so the watches of many clients do not all end and restart together.
WATCH_TIMEOUT_SECONDS = 300
# The reflector's backoff: 800 ms doubling to 30 s, reset after a successful list.
BACKOFF_SECONDS = (0.8, 30.0)


def key_of(obj: dict[str, Any]) -> Key:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


class Informer:
    """The objects of the collection at `path` (and selectors), kept by list + watch.

    `start()` begins in the background; `wait_synced()` waits for the first list.  `get` and
    `values` read the copy without any request.  `current` is True while the copy follows the
    server (listed, and no failure since); `changes` counts every change, so a reader can tell
    whether something it derived from the copy is out of date.
    """

    def __init__(self, api: AsyncClient, path: str, *, label_selector: str | None = None,
                 field_selector: str | None = None, on_change: OnChange | None = None,
                 watch_timeout_seconds: int = WATCH_TIMEOUT_SECONDS,
                 backoff_seconds: tuple[float, float] = BACKOFF_SECONDS,
                 page_size: int = DEFAULT_PAGE_SIZE,
                 transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        # `transform`: what of each object to keep, applied before it is stored (client-go's
        # SharedIndexInformer.SetTransform): a copy of thousands of objects is held for days.
        self.transform = transform
        self.api = api
        self.path = path
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.on_change = on_change
        self.watch_timeout_seconds = watch_timeout_seconds
        self.backoff_seconds = backoff_seconds
        self.page_size = page_size
        self.objects: dict[Key, dict[str, Any]] = {}
        self.resource_version = ""
        self.current = False
        self.changes = 0
        self.lists = 0  # how many times the collection was listed (1 + relists)
        self.last_error: ApiError | None = None
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ reading the copy

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.objects.get((namespace or "", name))

    def values(self) -> Iterator[dict[str, Any]]:
        return iter(list(self.objects.values()))

    def assume(self, obj: dict[str, Any]) -> None:
        """Hold an object this process has just written until the watch reports it (as
        client-go's MutationCache layers its own writes over an informer): the next reader does
        not ask for it again.  The watch's later events for it replace it as usual."""
        self.objects.setdefault(key_of(obj), obj)

    @property
    def synced(self) -> bool:
        """The first list has been read (the copy may be stale since: see `current`)."""
        return self._synced.is_set()

    # ------------------------------------------------------------------ running

    def start(self) -> None:
        """List and watch in the background, on the running event loop (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"watch {self.path}")

    async def wait_synced(self, timeout: float | None = None) -> bool:
        """Wait for the first list; False when it did not come within `timeout` seconds."""
        try:
            await asyncio.wait_for(self._synced.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        self.current = False

    async def _run(self) -> None:
        delay = self.backoff_seconds[0]
        listed = False
        while True:
            try:
                if not listed:
                    await self._list()
                    listed = True
                    delay = self.backoff_seconds[0]
                await self._watch()
            except ApiError as exc:
                self.last_error = exc
                self.current = False
                listed = False
                if exc.expired:
                    log.info("watch of %s expired at resourceVersion %s; listing again",
                             self.path, self.resource_version)
                    continue
                log.warning("watch of %s failed (%s); listing again in %.1fs", self.path, exc, delay)
                await asyncio.sleep(delay * (1 + random.random() / 10))
                delay = min(delay * 2, self.backoff_seconds[1])

    async def _list(self) -> None:
        items, version = await read_snapshot(
            self.api.get_json, self.path, label_selector=self.label_selector,
            field_selector=self.field_selector, page_size=self.page_size)
        self.lists += 1
        if self.transform is not None:
            items = [self.transform(item) for item in items]
        fresh = {key_of(item): item for item in items}
        old, self.objects = self.objects, fresh
        self.resource_version = version
        self.current = True
        self.last_error = None
        self._synced.set()
        for key, obj in old.items():
            if key not in fresh:
                self._changed("DELETED", obj)
        for key, obj in fresh.items():
            before = old.get(key)
            if before is None:
                self._changed("ADDED", obj)
            elif _version(before) != _version(obj):
                self._changed("MODIFIED", obj)

    async def _watch(self) -> None:
        """One watch from `resource_version`, until the server ends it."""
        async for event in self.api.watch(
                self.path, resource_version=self.resource_version,
                label_selector=self.label_selector, field_selector=self.field_selector,
                timeout_seconds=int(self.watch_timeout_seconds * (1 + random.random()))):
            kind, obj = event.get("type"), event["object"]
            if self.transform is not None and kind in ("ADDED", "MODIFIED", "DELETED"):
                obj = self.transform(obj)
            version = _version(obj)
            if kind in ("ADDED", "MODIFIED"):
                self.objects[key_of(obj)] = obj
                self._changed(str(kind), obj)
            elif kind == "DELETED":
                self.objects.pop(key_of(obj), None)
                self._changed("DELETED", obj)
            elif kind != "BOOKMARK":
                continue  # an event type from a newer server: skip it, keep the version
            if version:
                self.resource_version = version

    def _changed(self, kind: str, obj: dict[str, Any]) -> None:
        self.changes += 1
        if self.on_change is not None:
            try:
                self.on_change(kind, obj)
            except Exception:  # noqa: BLE001 - a caller's bug must not stop the watch
                log.exception("handling %s of %s failed", kind, key_of(obj))


def _version(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
