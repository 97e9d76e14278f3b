"""Every list is paginated (limit + continue), so a 10,000-pod cluster never costs one huge
response on the API server, and an expired continue token restarts the list instead of failing.
This is the one paginator: the CLI's lists and the webhook's clean-up both read through it."""

from __future__ import annotations

import functools
import json
import re
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Sequence

from kubectl_gpu.k8s.errors import ApiError

if TYPE_CHECKING:
    from kubectl_gpu.k8s.client import Client

# kubectl and client-go's pager ask for 500.  Each page is a round trip, and the pages of one list
# come one after another: on a remote control plane (scripts/bench_describe.py --latency-ms 50)
# listing 10,000 pods takes 1.2 s in pages of 500 and 0.66 s in pages of 1,000, against a 2 s
# budget for `describe`.  1,000 real pods (5-15 KB each with managedFields) are still a page of a
# few MB for the API server to encode; 2,000 would save little more (0.45 s) for twice the memory.
DEFAULT_PAGE_SIZE = 1000
# A list restarts from the first page when its continue token expires (HTTP 410); a cluster that
# expires tokens faster than we can read pages gets a clear error rather than an endless loop.
MAX_RESTARTS = 3
# Far beyond any real cluster (500 x 10,000 objects); stops a server that never ends a list.
MAX_PAGES = 10_000

GetPage = Callable[[str, Sequence[tuple[str, Any]]], Awaitable[dict[str, Any]]]
# Begins a page's request now and gives what to await for it later (AsyncClient._begin): the
# server prepares the next page while this one is read.  Without one, a request begins when awaited.
Begin = Callable[[Awaitable[dict[str, Any]]], Awaitable[dict[str, Any]]]
# Handed each page's items as they come (with True for the first page of a reading: a list that
# restarts after its continue token expired begins again), so the caller's work on a page overlaps
# the server's on the next.
EachPage = Callable[[list[dict[str, Any]], bool], None]


async def read_all_pages(get_json: GetPage, path: str, *,
                         label_selector: str | None = None,
                         field_selector: str | None = None,
                         page_size: int = DEFAULT_PAGE_SIZE, begin: Begin | None = None,
                         each_page: EachPage | None = None) -> list[dict[str, Any]]:
    """All items of the collection at `path`, read page by page with `get_json(path, query)`."""
    return (await read_snapshot(get_json, path, label_selector=label_selector, field_selector=field_selector,
                                page_size=page_size, begin=begin, each_page=each_page))[0]


async def read_snapshot(get_json: GetPage, path: str, *,
                        label_selector: str | None = None,
                        field_selector: str | None = None,
                        page_size: int = DEFAULT_PAGE_SIZE, begin: Begin | None = None,
                        each_page: EachPage | None = None) -> tuple[list[dict[str, Any]], str]:
    """All items of the collection at `path` and the list's resourceVersion (every page of one
    list is read at the first page's version), from which a watch continues (k8s/watch.py).
    With `begin`, the next page is asked for as soon as a page's continue token is read."""
    if page_size < 1:
        raise ValueError(f"page size must be at least 1, not {page_size}")
    for _ in range(MAX_RESTARTS + 1):
        try:
            return await _read_pages(get_json, path, label_selector, field_selector, page_size, begin, each_page)
        except ApiError as exc:
            if not exc.expired:
                raise
    raise ApiError.from_status(
        410, path, f"the list's continue token expired {MAX_RESTARTS + 1} times in a row; retry, "
        "or use a smaller cluster scope (-n NAMESPACE, -l SELECTOR)", "Expired")


async def _read_pages(get_json: GetPage, path: str, label_selector: str | None, field_selector: str | None,
                      page_size: int, begin: Begin | None,
                      each_page: EachPage | None) -> tuple[list[dict[str, Any]], str]:
    def query(token: str) -> list[tuple[str, Any]]:
        asked: list[tuple[str, Any]] = [("limit", page_size)]
        if label_selector:
            asked.append(("labelSelector", label_selector))
        if field_selector:
            asked.append(("fieldSelector", field_selector))
        if token:
            asked.append(("continue", token))
        return asked

    ask = begin or _when_awaited
    items: list[dict[str, Any]] = []
    version = ""
    pending = ask(get_json(path, query("")))
    try:
        for number in range(MAX_PAGES):
            page = await pending
            metadata = page.get("metadata") or {}
            version = version or str(metadata.get("resourceVersion") or "")
            token = metadata.get("continue") or ""
            if token:
                pending = ask(get_json(path, query(token)))
            found = _stamped(page)
            items.extend(found)
            if each_page is not None:
                each_page(found, number == 0)
            if not token:
                return items, version
    finally:  # an error or Ctrl-C before the next page was read; a page read already is let be
        _abandon(pending)
    raise ApiError(200, path, f"the server kept returning continue tokens after {MAX_PAGES} pages")


def _when_awaited(request: Awaitable[dict[str, Any]]) -> Awaitable[dict[str, Any]]:
    return request


def _abandon(pending: Any) -> None:
    """A next page nobody will read (an error or Ctrl-C before it): a request not begun is closed,
    a task on the loop cancelled (or, done already, its error taken so it is not reported lost),
    and a request on a thread of its own left to end there.  Each is harmless on a page read."""
    if hasattr(pending, "close"):
        pending.close()
    elif hasattr(pending, "cancel"):
        if not pending.cancel() and not pending.cancelled():
            pending.exception()
    else:
        pending.abandon()


def _stamped(page: dict[str, Any]) -> list[dict[str, Any]]:
    # The API server leaves apiVersion/kind off list items; like kubectl, put them back so every
    # object says what it is (code reading ResourceSlices checks `kind`).
    items = [i for i in page.get("items") or () if isinstance(i, dict)]
    list_kind = str(page.get("kind") or "")
    kind = list_kind[:-4] if list_kind.endswith("List") else ""
    api_version = page.get("apiVersion")
    if kind and api_version:
        for item in items:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
    return items


def list_objects(api: "Client", path: str, *,
                 label_selector: str | None = None,
                 field_selector: str | None = None,
                 page_size: int = DEFAULT_PAGE_SIZE,
                 mentioning: Sequence[bytes] = (),
                 each_page: EachPage | None = None) -> list[dict[str, Any]]:
    """All items of the collection at `path`, through the synchronous `Client` `api`; with
    `mentioning`, only those of pages whose JSON holds one of those texts (unmentioned_page);
    `each_page` is handed each page's items as they come."""
    return api.list_objects(path, label_selector=label_selector, field_selector=field_selector,
                            page_size=page_size, mentioning=mentioning, each_page=each_page)


@functools.lru_cache(maxsize=8)
def _any_of(texts: tuple[bytes, ...]) -> Any:
    """One RE2 pattern for the texts and the escapes that could spell them: a single pass over a page
    (RE2 runs alternatives as one automaton; 26 `in` searches of a 1 MB page cost 7 ms, this 2 ms).
    Case-insensitive, instead of searching a lower-cased copy of the page: it finds every text
    the copy would (and a few Unicode case variants more, whose pages are then decoded whole)."""
    import re2

    return re2.compile(b"(?i)" + b"|".join(re.escape(text) for text in (*texts, b"\\u", b"\\/")))


def unmentioned_page(raw: bytes, texts: Sequence[bytes]) -> dict[str, Any] | None:
    """A list page read without its items, when its JSON holds none of `texts` (lower-case) and
    so no item can be one the caller looks for; None when it must be decoded whole.

    describe asks for the pods that hold device-plugin GPUs: a page of 1,000 pods whose JSON names
    no legacy resource (core.legacy_texts()) holds none, and decoding it costs ~5 ms for nothing.
    The text is searched as the API server writes it: Go's encoding/json writes resource names
    as they are (it escapes only <, >, &, U+2028 and U+2029), so a page with any backslash-u or
    backslash-slash escape, which could spell a name another way, is decoded whole.  The list's
    metadata (its continue token and resourceVersion) comes before its items, in the order of
    Go's list types, and is read alone; a page laid out otherwise is decoded whole."""
    if _any_of(tuple(texts)).search(raw) is not None:
        return None
    end = raw.find(b'"items":')
    if end < 0:
        return None
    head = raw[:end].rstrip()
    if not head.endswith(b","):
        return None
    try:
        page = json.loads(head[:-1] + b"}")
    except ValueError:
        return None
    if not isinstance(page, dict) or not isinstance(page.get("metadata"), dict):
        return None
    page["items"] = []
    return page
