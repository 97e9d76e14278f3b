"""Any value anywhere in the inputs people hand the read-only commands gives an answer or an error
that names what to fix, never a traceback.

The API server would refuse most of these shapes (every field of resource.k8s.io has one type), but
`explain -f/--slices`, `inventory --nvml-recording` and kubeconfig files are read from disk where
nobody validated them.  Each property takes a real, valid input, puts one arbitrary JSON value at one
place in it (replacing a field, a list item, or the whole), and checks the outcome is either a result
or the command's own input error.  A corpus mutation fuzz found these shapes printing tracebacks in
explain, ResourceSlice reading, NVML recordings and kubeconfigs; these properties keep them out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.json_places import with_value_at

DATA = Path(__file__).parent / "data"
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2**40) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def places(value: Any, path: tuple = ()) -> list[tuple]:
    """Every place in a JSON value: the paths of its maps' keys and lists' items."""
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += places(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += places(item, (*path, index))
    return found


@st.composite
def changed(draw, original: Any) -> Any:
    """``original`` with one arbitrary value at one of its places."""
    return with_value_at(original, draw(st.sampled_from(places(original))), draw(json_values))


CLAIM = yaml.safe_load("""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: trainer, namespace: ml}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.nvidia.com
        count: 1
        capacity: {requests: {memory: 10Gi}}
        selectors:
        - cel: {expression: "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA')"}
    - name: small
      firstAvailable:
      - {name: mig, deviceClassName: mig.nvidia.com}
      - {name: whole, deviceClassName: gpu.nvidia.com, allocationMode: ExactCount}
    constraints:
    - {requests: [gpu, small], matchAttribute: gpu.nvidia.com/parentUUID}
status:
  allocation: {devices: {results: [{driver: gpu.nvidia.com, pool: p, device: gpu-0, request: gpu}]}}
""")
SLICES = [d for d in yaml.safe_load_all((DATA / "slices" / "nvidia-h100-node.yaml").read_text()) if d]


@SETTINGS
@given(st.data())
def test_explain_answers_or_names_the_field_for_any_claim(data) -> None:
    from kubectl_gpu.explain.inputs import explain_objects, sort_objects
    from kubectl_gpu.explain.model import ClaimError, ClaimResult

    claim = data.draw(changed(CLAIM))
    inputs = sort_objects([claim])
    explanation = explain_objects(claims=inputs.claims, slices=SLICES, allocated_claims=inputs.claims)
    assert all(isinstance(item, (ClaimResult, ClaimError)) for item in explanation.items)


@SETTINGS
@given(st.data())
def test_a_resource_slice_of_any_shape_is_read_or_refused_by_name(data) -> None:
    from kubectl_gpu.dra.devices import devices_from_slice, InvalidResourceSlice

    resource_slice = data.draw(changed(SLICES[0]))
    try:
        devices_from_slice(resource_slice)
    except InvalidResourceSlice as error:
        assert str(error)


@SETTINGS
@given(st.data())
def test_an_nvml_recording_of_any_shape_is_read_or_refused_by_name(data) -> None:
    from kubectl_gpu.inventory.recorded_nvml import recording_problem

    node = data.draw(changed(json.loads((DATA / "nvml" / "a100-sxm4-40gb-mig.json").read_text())))
    if not isinstance(node, dict) or recording_problem(node) is not None:
        return  # refused by name before any call (tests/test_inventory_cli.py shows the messages)
    _inventory_of(node)


def _inventory_of(node: dict) -> None:
    """The inventory of a recording the schema accepts: a result, or a RecordingError naming a key a
    call needed, never another exception."""
    import pynvml

    from kubectl_gpu.inventory import InventoryUnavailable, local_inventory
    from kubectl_gpu.inventory.recorded_nvml import RecordedNvml, RecordingError

    saved = {name: getattr(pynvml, name) for name in dir(pynvml) if name.startswith("nvml")}
    try:
        RecordedNvml(node).install()
        local_inventory("demo")
    except (RecordingError, InventoryUnavailable):
        pass
    finally:
        for name, value in saved.items():
            setattr(pynvml, name, value)


KUBECONFIG = yaml.safe_load("""
apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev
  cluster: {server: "https://127.0.0.1:1", certificate-authority-data: "", tls-server-name: api, proxy-url: "http://127.0.0.1:3"}
contexts:
- name: dev
  context: {cluster: dev, user: dev, namespace: ml}
users:
- name: dev
  user:
    token: abc
    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/false, args: [a], interactiveMode: Never}
""")


@SETTINGS
@given(st.data())
def test_a_kubeconfig_of_any_shape_connects_or_says_what_to_fix(tmp_path_factory, data) -> None:
    from kubectl_gpu.k8s import KubeconfigError, connect

    path = tmp_path_factory.mktemp("kc") / "config"
    path.write_text(yaml.safe_dump(data.draw(changed(KUBECONFIG))))
    try:
        connect(str(path), None).close()
    except KubeconfigError as error:
        assert str(error)
