"""A list's next page is asked for as soon as a page's continue token is read, so the API server
prepares it while the caller reads this one (kubectl_gpu/k8s/lists.py); `each_page` hands the
caller each page's items as they come, and a list that restarts after its continue token expired
hands them again from the first page."""

from __future__ import annotations

import asyncio
import gc
import time
import warnings

import pytest

from kubectl_gpu.k8s import ApiError, connect
from kubectl_gpu.k8s.lists import list_objects, read_all_pages
from tests import builders as b

PODS = "/api/v1/namespaces/ml/pods"


def seeded(double, pods: int):
    double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
                *(b.pod(f"p{i}", "ml") for i in range(pods)))
    return connect(double.kubeconfig_path()).api


def until(check, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.005)
    return check()


def test_the_next_page_is_asked_for_while_the_caller_reads_a_page(k8s_double):
    api = seeded(k8s_double, 5)
    asked_while_reading = []

    def each_page(items, first):
        page = len(asked_while_reading) + 1
        if page < 3:  # the pages before the last
            # Without the look-ahead page + 1 would only be asked for after this returns.
            asked_while_reading.append(until(lambda: k8s_double.count(verb="list", resource="pods") == page + 1))

    items = list_objects(api, PODS, page_size=2, each_page=each_page)
    assert sorted(p["metadata"]["name"] for p in items) == [f"p{i}" for i in range(5)]
    assert asked_while_reading == [True, True]  # pages 2 and 3 were asked for while 1 and 2 were read
    assert k8s_double.count(verb="list", resource="pods") == 3  # and no page after the last


def test_each_page_gets_the_items_in_order_and_marks_the_first(k8s_double):
    api = seeded(k8s_double, 5)
    pages = []
    items = list_objects(api, PODS, page_size=2, each_page=lambda found, first: pages.append((len(found), first)))
    assert pages == [(2, True), (2, False), (1, False)]
    assert [p["kind"] for p in items] == ["Pod"] * 5  # items are stamped before the caller sees them


def test_a_failing_reader_of_a_page_stops_the_list(k8s_double):
    api = seeded(k8s_double, 5)

    def each_page(items, first):
        raise ValueError("the caller could not use this page")

    with pytest.raises(ValueError, match="could not use"):
        list_objects(api, PODS, page_size=2, each_page=each_page)


class Pages:
    """An API server's pages of `names`, `size` at a time; with `expiring`, the first continue
    token it is handed has expired."""

    def __init__(self, names: list[str], size: int, expiring: bool = True) -> None:
        self.names, self.size, self.expired_once, self.asked = names, size, not expiring, []

    async def get_json(self, path, query):
        asked = dict(query)
        self.asked.append(asked.get("continue", ""))
        start = int(asked.get("continue") or 0)
        if start and not self.expired_once:
            self.expired_once = True
            raise ApiError.from_status(410, path, "continue token expired", "Expired")
        end = start + self.size
        metadata = {"resourceVersion": "7", **({"continue": str(end)} if end < len(self.names) else {})}
        return {"kind": "PodList", "apiVersion": "v1", "metadata": metadata,
                "items": [{"metadata": {"name": n}} for n in self.names[start:end]]}


@pytest.mark.parametrize("look_ahead", [False, True], ids=["awaited", "begun early"])
def test_an_expired_continue_token_starts_the_list_and_its_pages_again(look_ahead):
    server = Pages([f"p{i}" for i in range(5)], 2)
    handed = []

    async def read():
        begin = asyncio.ensure_future if look_ahead else None
        return await read_all_pages(server.get_json, PODS, page_size=2, begin=begin,
                                    each_page=lambda items, first: handed.append(
                                        ([i["metadata"]["name"] for i in items], first)))

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no request left unawaited
        items = asyncio.run(read())
    assert [i["metadata"]["name"] for i in items] == [f"p{i}" for i in range(5)]
    assert handed == [(["p0", "p1"], True),  # the first reading, whose next token expired
                      (["p0", "p1"], True), (["p2", "p3"], False), (["p4"], False)]
    assert server.asked == ["", "2", "", "2", "4"]


@pytest.mark.parametrize("look_ahead", [False, True], ids=["awaited", "begun early"])
def test_a_page_nobody_will_read_is_let_go_quietly(look_ahead):
    """The caller fails on the first page: the second, asked for already, is cancelled (or was
    never begun), and nothing is reported as a lost task or an unawaited request."""
    server = Pages([f"p{i}" for i in range(5)], 2, expiring=False)

    def each_page(items, first):
        raise ValueError("the caller could not use this page")

    async def read():
        begin = asyncio.ensure_future if look_ahead else None
        with pytest.raises(ValueError, match="could not use"):
            await read_all_pages(server.get_json, PODS, page_size=2, begin=begin, each_page=each_page)
        await asyncio.sleep(0)  # a cancelled task ends here

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(read())
        gc.collect()
    assert [str(w.message) for w in caught] == []
    assert server.asked[0] == "" and "4" not in server.asked  # the list stopped at the failing page
