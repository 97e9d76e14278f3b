"""What the client reads from an API server: every value Go's encoding/json writes for the API's
fields is read as the standard library's json.loads reads it, value and type
(kubectl_gpu/json_codec.py decode_api_json; what is not JSON fails as the standard library words
it, with decode_json's bodies: tests/test_webhook_perf_caches.py)."""

from __future__ import annotations

import json

import pytest

from kubectl_gpu.json_codec import decode_api_json

# Numbers an API server writes: int32/int64 fields at their ends, uint64 at its end (never beyond
# int64 from the API server, but orjson reads it exactly too), and float64 as Go's strconv writes
# it, including an integer beyond 64 bits that sigs.k8s.io/json turned into a float64.
API_NUMBERS = [0, -1, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63), 2**64 - 1, 1.8446744073709552e+19,
               0.5, 1e-07, 5e-324, 1.7976931348623157e+308, -0.0]


@pytest.mark.parametrize("number", API_NUMBERS, ids=repr)
def test_numbers_an_api_server_writes_are_read_exactly(number):
    body = json.dumps({"spec": {"replicas": number}}).encode()
    ours, expected = decode_api_json(body)["spec"]["replicas"], json.loads(body)["spec"]["replicas"]
    assert type(ours) is type(expected) and ours == expected


@pytest.mark.parametrize("body", [
    b'{"metadata":{"name":"caf\\u00e9","annotations":{"a":"\\u003c\\u0026\\u003e"}},"items":[]}',
    '{"metadata":{"name":"café"}}'.encode(),
    b'{"a":NaN}',  # not JSON, but json.loads reads it: so do we
    '{"a":"\u00e9"}'.encode("utf-16"),
])
def test_answers_are_read_as_the_standard_library_reads_them(body):
    assert json.dumps(decode_api_json(body)) == json.dumps(json.loads(body))
