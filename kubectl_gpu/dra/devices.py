"""Devices as the DRA CEL environment sees them, read from ResourceSlice objects.

Kubernetes maps every attribute and capacity name of a device into ``domain -> name -> value``:
a qualified name ``dom.example.com/name`` goes to its own domain, an unqualified ``name`` to the
driver's domain.  ``device.attributes["gpu.nvidia.com"].productName`` therefore sees both
``productName`` and ``gpu.nvidia.com/productName``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar, Collection, Iterable, Mapping, Union

from .facts import DRA_GROUP

from .values import InvalidValue, Quantity, Semver

# A list value comes from the list-typed attributes of Kubernetes 1.36 (DRAListTypeAttributes).
AttributeValue = Union[str, int, bool, Semver, list]



class InvalidResourceSlice(ValueError):
    """A ResourceSlice this tool cannot read; the message says which field to fix."""


@dataclass(frozen=True)
class Taint:
    """A device taint (KEP-5055): ``effect`` NoSchedule and NoExecute keep the allocator away
    unless the request tolerates it; None and unknown effects do not."""

    key: str
    value: str = ""
    effect: str = ""


@dataclass(frozen=True)
class PlacementFacts:
    """What the structured allocator reads of a device beyond what CEL sees: its taints, the
    shared counters it draws on (partitionable devices, KEP-4815: ``counter set -> counter ->
    value``), its binding conditions (KEP-5007) and, in a slice with perDeviceNodeSelection, where
    it is reachable.  Most devices have none of these: they share :data:`NO_PLACEMENT_FACTS`."""

    taints: tuple[Taint, ...] = ()
    consumes_counters: tuple[tuple[str, Mapping[str, Fraction]], ...] = ()
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    binds_to_node: bool = False
    all_nodes: bool = False  # perDeviceNodeSelection: reachable from every node
    node_selector: Mapping[str, Any] | None = None  # perDeviceNodeSelection: a core/v1 NodeSelector


NO_PLACEMENT_FACTS = PlacementFacts()


_FRESH: Any = object()  # "a new empty dict": the default_factory of Device's map fields
_set_fields = object.__setattr__


@dataclass(frozen=True, eq=False, init=False)
class Device:
    id: ClassVar[str]  # set by __init__ (see there), not a field
    driver: str
    name: str
    pool: str = ""
    attributes: Mapping[str, Mapping[str, AttributeValue]] = field(default_factory=dict)
    capacity: Mapping[str, Mapping[str, Quantity]] = field(default_factory=dict)
    allow_multiple_allocations: bool = False
    node_name: str | None = None  # None: all nodes, or a node selector (see node_scope)
    node_scope: str = ""  # human description of where the device is reachable
    slice_name: str = ""
    # Qualified capacity name -> requestPolicy of consumable capacity (KEP-5075), as in the slice.
    request_policies: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    placement: PlacementFacts = NO_PLACEMENT_FACTS

    def __init__(self, driver: str, name: str, pool: str = "", attributes: Any = _FRESH, capacity: Any = _FRESH,
                 allow_multiple_allocations: bool = False, node_name: str | None = None, node_scope: str = "",
                 slice_name: str = "", request_policies: Any = _FRESH,
                 placement: PlacementFacts = NO_PLACEMENT_FACTS) -> None:
        # The generated __init__ of a frozen dataclass, in one call instead of one object.__setattr__
        # per field: explain builds 8,000 devices (4 us -> 1.5 us each).  Same fields, same defaults.
        # ``id`` (not a field): driver/pool/device, the way the scheduler names a device in
        # allocation results.  Kept, not a property: explain reads it for every device and request.
        _set_fields(self, "__dict__", {
            "driver": driver, "name": name, "pool": pool,
            "attributes": {} if attributes is _FRESH else attributes,
            "capacity": {} if capacity is _FRESH else capacity,
            "allow_multiple_allocations": allow_multiple_allocations, "node_name": node_name,
            "node_scope": node_scope, "slice_name": slice_name,
            "request_policies": {} if request_policies is _FRESH else request_policies,
            "placement": placement,
            "id": f"{driver}/{pool}/{name}",
        })

    def attribute(self, qualified: str) -> AttributeValue | None:
        domain, name = split_qualified_name(qualified, self.driver)
        return self.attributes.get(domain, {}).get(name)

    def capacity_value(self, qualified: str) -> Quantity | None:
        domain, name = split_qualified_name(qualified, self.driver)
        return self.capacity.get(domain, {}).get(name)


def split_qualified_name(name: str, driver: str) -> tuple[str, str]:
    if "/" in name:
        domain, _, short = name.partition("/")
        return domain, short
    return driver, name


def make_device(
    driver: str,
    name: str,
    *,
    attributes: Mapping[str, Any] | None = None,
    capacity: Mapping[str, Any] | None = None,
    **extra: Any,
) -> Device:
    """Build a Device from flat qualified names, e.g. ``{"productName": "NVIDIA H100"}`` with plain
    Python values (str, int, bool, Semver) and capacities as Quantity or quantity text."""
    attrs: dict[str, dict[str, AttributeValue]] = {}
    for qualified, value in (attributes or {}).items():
        domain, short = split_qualified_name(qualified, driver)
        attrs.setdefault(domain, {})[short] = value
    caps: dict[str, dict[str, Quantity]] = {}
    for qualified, value in (capacity or {}).items():
        domain, short = split_qualified_name(qualified, driver)
        caps.setdefault(domain, {})[short] = value if isinstance(value, Quantity) else Quantity.read(value)
    return Device(driver=driver, name=name, attributes=attrs, capacity=caps, **extra)


def is_resource_slice(obj: Any) -> bool:
    return (
        _is_mapping(obj)
        and obj.get("kind") == "ResourceSlice"
        and str(obj.get("apiVersion", "")).startswith(_DRA_PREFIX)
    )


_DRA_PREFIX = f"{DRA_GROUP}/"


def current_slices(resource_slices: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The slices of the newest generation of each pool.

    A driver replacing a pool publishes slices with a higher pool.generation; the scheduler
    ignores the older ones, so their devices must not be counted.  A ResourceSlice is cluster-scoped
    and named, so a cluster holds one of each name: a slice given twice (two overlapping
    `kubectl get -o yaml` dumps) counts once, the last copy.  Slices without a name are all kept.
    """
    named: dict[Any, Mapping[str, Any]] = {}
    for position, s in enumerate(resource_slices):
        if isinstance(s, Mapping):
            meta = s.get("metadata")
            name = meta.get("name") if isinstance(meta, Mapping) else None
            named[name if isinstance(name, str) and name else position] = s
    pooled = [(s, *_pool_generation(s)) for s in named.values()]
    newest: dict[tuple[str, str], int] = {}
    for _, pool, generation in pooled:
        newest[pool] = max(newest.get(pool, 0), generation)
    return [s for s, pool, generation in pooled if generation == newest[pool]]


def nodes_of_drivers(resource_slices: Iterable[Mapping[str, Any]], drivers: Collection[str]) -> frozenset[str]:
    """The nodes a current ResourceSlice of one of ``drivers`` names (spec.nodeName): where its kubelet
    plugin runs, label or no label (GPU Operator installs of the NVIDIA driver set none)."""
    names = set()
    for resource_slice in current_slices(list(resource_slices)):
        spec = resource_slice.get("spec")
        if _is_mapping(spec) and spec.get("driver") in drivers and isinstance(spec.get("nodeName"), str):
            names.add(spec["nodeName"])
    return frozenset(names)


def _pool_generation(resource_slice: Mapping[str, Any]) -> tuple[tuple[str, str], int]:
    """((driver, pool name), pool generation) of a slice; malformed parts read as empty/0."""
    spec = resource_slice.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    pool = spec.get("pool")
    pool = pool if isinstance(pool, Mapping) else {}
    try:
        generation = int(pool.get("generation") or 0)
    except (TypeError, ValueError):
        generation = 0
    return (str(spec.get("driver") or ""), str(pool.get("name") or "")), generation


def devices_from_slice(slice_obj: Mapping[str, Any]) -> list[Device]:
    """All devices of one ResourceSlice (resource.k8s.io v1, v1beta2, v1beta1 and the older
    v1alpha3 ``basic:`` wrapper)."""
    fields = _slice_fields(slice_obj)
    devices = _quick_devices(*fields)
    return _general_devices(*fields) if devices is None else devices


def _slice_fields(slice_obj: Any) -> tuple[list, str, str, str | None, str, str]:
    """What every device of a slice shares: (devices, driver, pool, node name, node scope, slice
    name), the slice's own fields checked."""
    if not is_resource_slice(slice_obj):
        kind = slice_obj.get("kind") if isinstance(slice_obj, Mapping) else type(slice_obj).__name__
        raise InvalidResourceSlice(
            f"expected a resource.k8s.io ResourceSlice, got {kind!r}; pass the output of "
            "`kubectl get resourceslices -o yaml`"
        )
    meta = slice_obj.get("metadata") or _NOTHING
    if not _is_mapping(meta):
        raise InvalidResourceSlice(f"ResourceSlice: metadata must be a map, not {type(meta).__name__}")
    slice_name = str(meta.get("name") or meta.get("generateName") or "<unnamed>")
    spec = slice_obj.get("spec")
    if not _is_mapping(spec):
        raise InvalidResourceSlice(f"ResourceSlice {slice_name}: spec is missing")
    driver = spec.get("driver")
    if not isinstance(driver, str) or not driver:
        raise InvalidResourceSlice(f"ResourceSlice {slice_name}: spec.driver is missing")
    pool_spec = spec.get("pool") or _NOTHING
    if not _is_mapping(pool_spec):
        raise InvalidResourceSlice(f"ResourceSlice {slice_name}: spec.pool must be a map with a name")
    pool = pool_spec.get("name") or slice_name
    slice_node = spec.get("nodeName")
    if slice_node:
        scope = f"node {slice_node}"
    elif spec.get("allNodes"):
        scope = "all nodes"
    elif spec.get("nodeSelector"):
        scope = f"nodes selected by ResourceSlice {slice_name}"
    else:
        scope = "per-device node selection"
    raw_devices = spec.get("devices") or []
    if not isinstance(raw_devices, list):
        raise InvalidResourceSlice(f"ResourceSlice {slice_name}: spec.devices must be a list")
    # The node most devices inherit (scope above names it); None when the slice names none.
    return raw_devices, driver, str(pool), str(slice_node) if slice_node else None, scope, slice_name


def _general_devices(raw_devices: list, driver: str, pool: str, slice_node: str | None, scope: str,
                     slice_name: str) -> list[Device]:
    """The general reading of a slice's devices: every device and value checked one by one, as
    the API server's validation does, and the errors worded.  The reference of _quick_devices."""
    devices = []
    names: dict[str, tuple[str, str]] = {}  # qualified name -> (domain, name): devices repeat names
    # Once per device (8,000 in a 1,000-node cluster): the Mapping checks try dict first (the ABC
    # check is slow), and Device gets positional arguments (keywords cost more per call).
    for index, raw in enumerate(raw_devices):
        if not (raw.__class__ is dict or isinstance(raw, Mapping)) or not raw.get("name"):
            raise InvalidResourceSlice(f"{_where(slice_name, index)}: every device needs a name")
        basic = raw.get("basic")
        body = basic if basic is not None and _is_mapping(basic) else raw  # v1beta1/v1alpha3
        node = raw.get("nodeName") or body.get("nodeName") or slice_node
        capacity = body.get("capacity") or _NOTHING
        attributes = body.get("attributes") or _NOTHING
        if not (attributes.__class__ is dict or isinstance(attributes, Mapping)):
            raise InvalidResourceSlice(f"{_where(slice_name, index)}.attributes must be a map of names to values")
        if not (capacity.__class__ is dict or isinstance(capacity, Mapping)):
            raise InvalidResourceSlice(f"{_where(slice_name, index)}.capacity must be a map of names to values")
        name = str(raw["name"])
        values = _read_attributes(attributes, driver, slice_name, index, names) if attributes else {}
        capacities, policies = _capacity(capacity, driver, slice_name, index, names) if capacity else ({}, {})
        placement = _placement(body, raw, _where(slice_name, index)) if not _PLACEMENT_KEYS.isdisjoint(body) else NO_PLACEMENT_FACTS
        devices.append(
            Device(
                driver,
                name,
                pool,
                values,
                capacities,
                bool(raw.get("allowMultipleAllocations") or body.get("allowMultipleAllocations")),
                None if not node else node if node is slice_node else str(node),
                scope if node is slice_node else f"node {node}" if node else scope,
                slice_name,
                policies,
                placement,
            )
        )
    return devices


# A device's fields that PlacementFacts holds (v1/v1beta2 names; v1beta1 has them under basic:).
_PLACEMENT_KEYS = frozenset({"taints", "consumesCounters", "bindingConditions", "bindingFailureConditions",
                             "bindsToNode", "allNodes", "nodeSelector"})
_TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")


def _placement(body: Mapping[str, Any], raw: Mapping[str, Any], where: str) -> PlacementFacts:
    """A device's PlacementFacts, each field checked as the API server checks its shape."""
    taints = []
    for i, taint in enumerate(_list_field(body.get("taints"), f"{where}.taints")):
        if not _is_mapping(taint) or not isinstance(taint.get("key"), str) or not taint.get("key"):
            raise InvalidResourceSlice(f"{where}.taints[{i}]: every taint needs a key")
        effect = taint.get("effect", "")
        if not isinstance(effect, str):
            raise InvalidResourceSlice(f"{where}.taints[{i}].effect must be one of {', '.join(_TAINT_EFFECTS)}")
        taints.append(Taint(taint["key"], str(taint.get("value") or ""), effect))
    consumes = _named_counters(body.get("consumesCounters"), "counterSet", f"{where}.consumesCounters")
    conditions = _list_field(body.get("bindingConditions"), f"{where}.bindingConditions")
    failures = _list_field(body.get("bindingFailureConditions"), f"{where}.bindingFailureConditions")
    selector = body.get("nodeSelector") or raw.get("nodeSelector")
    if selector is not None and not _is_mapping(selector):
        raise InvalidResourceSlice(f"{where}.nodeSelector must be a NodeSelector (nodeSelectorTerms)")
    return PlacementFacts(
        taints=tuple(taints),
        consumes_counters=consumes,
        binding_conditions=tuple(str(c) for c in conditions),
        binding_failure_conditions=tuple(str(c) for c in failures),
        binds_to_node=bool(body.get("bindsToNode")),
        all_nodes=bool(body.get("allNodes") or raw.get("allNodes")),
        node_selector=selector,
    )


def _list_field(value: Any, where: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidResourceSlice(f"{where} must be a list")
    return value


def _named_counters(raw: Any, name_key: str, where: str) -> tuple[tuple[str, dict[str, Fraction]], ...]:
    """A slice's sharedCounters (``name``) or a device's consumesCounters (``counterSet``): each
    entry's name and its counters."""
    named = []
    for i, entry in enumerate(_list_field(raw, where)):
        at = f"{where}[{i}]"
        if not _is_mapping(entry) or not isinstance(entry.get(name_key), str) or not entry.get(name_key):
            raise InvalidResourceSlice(f"{at}: every entry needs a {name_key}")
        named.append((entry[name_key], _counters(entry.get("counters"), f"{at}.counters")))
    return tuple(named)


def _counters(raw: Any, where: str) -> dict[str, Fraction]:
    """``{name: {value: quantity}}`` (a counter set's or a device's consumption) as exact values."""
    if raw is None:
        return {}
    if not _is_mapping(raw):
        raise InvalidResourceSlice(f"{where} must be a map of counter names to {{value: quantity}}")
    counters = {}
    for name, entry in raw.items():
        text = entry.get("value") if _is_mapping(entry) else entry
        try:
            counters[str(name)] = Quantity.read(text).value
        except InvalidValue as err:
            raise InvalidResourceSlice(f"{where}.{name}: {text!r}: {err}") from None
    return counters


@dataclass(frozen=True)
class SliceFacts:
    """One ResourceSlice as the structured allocator gathers pools from it: the pool it belongs
    to (and that pool's generation and slice count), where its devices are reachable, the counter
    sets it publishes (partitionable devices) and its devices."""

    name: str
    driver: str
    pool: str
    generation: int
    resource_slice_count: int
    node_name: str | None
    all_nodes: bool
    node_selector: Mapping[str, Any] | None
    per_device_node_selection: bool
    shared_counters: tuple[tuple[str, Mapping[str, Fraction]], ...]
    devices: tuple[Device, ...]


def read_slice(slice_obj: Mapping[str, Any]) -> SliceFacts:
    """A ResourceSlice's SliceFacts; InvalidResourceSlice names the field to fix."""
    devices = devices_from_slice(slice_obj)
    spec = slice_obj["spec"]
    meta = slice_obj.get("metadata") or _NOTHING
    name = str(meta.get("name") or meta.get("generateName") or "<unnamed>")
    pool = spec.get("pool") or _NOTHING
    try:
        generation = int(pool.get("generation") or 0)
        count = int(pool.get("resourceSliceCount") or 1)
    except (TypeError, ValueError):
        raise InvalidResourceSlice(f"ResourceSlice {name}: spec.pool.generation and resourceSliceCount must be integers") from None
    shared = _named_counters(spec.get("sharedCounters"), "name", f"ResourceSlice {name}: spec.sharedCounters")
    selector = spec.get("nodeSelector")
    return SliceFacts(
        name=name,
        driver=str(spec["driver"]),
        pool=str(pool.get("name") or name),
        generation=generation,
        resource_slice_count=count,
        node_name=str(spec["nodeName"]) if spec.get("nodeName") else None,
        all_nodes=bool(spec.get("allNodes")),
        node_selector=selector if _is_mapping(selector) else None,
        per_device_node_selection=bool(spec.get("perDeviceNodeSelection")),
        shared_counters=shared,
        devices=tuple(devices),
    )


class _Unusual(Exception):
    """Something the quick reading (_quick_devices) leaves to the general one."""


def _quick_devices(raw_devices: list, driver: str, pool: str, slice_node: str | None, scope: str,
                   slice_name: str) -> list[Device] | None:
    """The devices of a slice read quickly, or None: then _general_devices reads them (and words
    the error, if there is one).

    explain reads 8,000 devices x ~10 attributes in a 1,000-node cluster, and a driver's devices
    share one shape: the same attribute names with the same kinds, in the same order, the same
    capacity names, each ``{value: ...}``, no per-device node.  Each shape gets a reader of its
    own (_device_reader), straight-line code that takes such a device apart and checks it with
    no loop over its values (callgrind, building the 8,000 devices of scripts/bench_explain.py's
    1,000 slices: 511 M -> ~288 M instructions, ~64,000 -> ~36,000 a device, of which ~5,000
    make the Device).  A device of another shape gets its shape's reader; a shape with anything
    else in it (a requestPolicy, a bare quantity, ``basic:``, a nodeName, a name that is not a
    string...) has none, and the whole slice is read generally.  A slice starts with the reader
    its driver's last slice ended with: 1,000 slices of one driver make one reader."""
    read = _last_reader.get(driver, _no_reader)
    devices = []
    append = devices.append
    for raw in raw_devices:
        try:
            append(read(raw, pool, slice_node, scope, slice_name))
            continue
        except _GIVE_UP:
            pass
        read = _device_reader(_device_shape(raw, driver))
        if read is None:
            return None
        try:
            append(read(raw, pool, slice_node, scope, slice_name))
        except _GIVE_UP:
            return None
    _last_reader[driver] = read
    return devices


# What a reader raises on a device that is not of its shape (a key missing, a subscript on a list,
# an unpacking of the wrong length, an invalid version or quantity).
_GIVE_UP = (_Unusual, LookupError, TypeError, ValueError)


def _no_reader(*_: Any) -> Device:
    raise _Unusual


# Driver -> the reader that read its last slice: the next slice's too, most often.  By driver: a
# reader writes its driver's name into the devices and splits names into its driver's domains.
_last_reader: dict[str, Any] = {}

# Left to _general_devices: the v1beta1 wrapper and where a device is reachable from.
_GENERAL_DEVICE_KEYS = {"basic", "nodeName", "allowMultipleAllocations", "allNodes", "nodeSelector"}


def _device_shape(raw: Any, driver: str) -> tuple | None:
    """(driver, the device's fields, attribute names, their kinds, capacity names) of a device the
    quick reading can read, or None: a device that is not a map or has a field the general reading
    reads beyond name, attributes, capacity and PlacementFacts (``basic:``, nodeName, allNodes,
    nodeSelector, allowMultipleAllocations), an attribute or capacity name
    that is not a string (YAML's 1 and True), an odd kind, a capacity entry other than
    ``{value: ...}``."""
    if raw.__class__ is not dict or "name" not in raw or not raw.keys().isdisjoint(_GENERAL_DEVICE_KEYS):
        return None
    fields = tuple(raw)
    attributes = raw.get("attributes", _NOTHING)
    capacity = raw.get("capacity", _NOTHING)
    if (not all(key.__class__ is str for key in fields) or attributes.__class__ is not dict
            or capacity.__class__ is not dict):
        return None
    kinds = []
    for name, typed in attributes.items():
        if name.__class__ is not str or typed.__class__ is not dict or len(typed) != 1:
            return None
        kind = next(iter(typed))
        if kind.__class__ is not str or kind not in _KIND_CLASSES:
            return None
        kinds.append(kind)
    for name, entry in capacity.items():
        if name.__class__ is not str or entry.__class__ is not dict or tuple(entry) != ("value",):
            return None
    return driver, tuple(sorted(fields)), tuple(attributes), tuple(kinds), tuple(capacity)


@functools.lru_cache(maxsize=64)
def _device_reader(shape: tuple | None) -> Any:
    """The reader of devices of one shape (see _device_shape), or None.

    Generated code, one line per check, so that a device costs a few bytecodes per value: for
    names ``uuid`` (a string) and ``driverVersion`` (a version) of driver ``gpu.nvidia.com``::

        def read(raw, pool, node, scope, slice_name):
            if type(raw) is not dict or len(raw) != 3: raise _Unusual
            attributes = raw['attributes']; capacity = raw['capacity']; name = raw['name']
            if type(name) is not str or not name: raise _Unusual
            if type(attributes) is not dict: raise _Unusual
            ...
            n0, n1, = attributes
            if n0 != 'uuid' or n1 != 'driverVersion': raise _Unusual
            t0, t1, = attributes.values()
            if type(t0) is not dict or type(t1) is not dict or len(t0) + len(t1) != 2: raise _Unusual
            v0 = t0['string']; v1 = t1['version']
            if type(v0) is not str or type(v1) is not str: raise _Unusual
            v1 = _versions[v1]
            ...the capacity the same way, then the Device, its fields as _general_devices sets them.

    A value of another type or a version that does not parse (ValueError) gives up (_GIVE_UP),
    and the general reading words the error.  Names are written into the code with repr()."""
    if shape is None:
        return None
    driver, fields, names, kinds, capacity_names = shape
    lines = ["def read(raw, pool, node, scope, slice_name):"]
    add = lines.append
    # The device has exactly the shape's fields: as many, and each subscript finds its own.
    add(f"    if type(raw) is not dict or len(raw) != {len(fields)}: raise _Unusual")
    add("    " + "; ".join(f"{field} = raw[{field!r}]" if field in ("name", "attributes", "capacity")
                           else f"raw[{field!r}]" for field in fields))
    add("    if type(name) is not str or not name: raise _Unusual")
    for field in ("attributes", "capacity"):
        add(f"    if type({field}) is not dict: raise _Unusual" if field in fields else f"    {field} = _NOTHING")
    values = [f"v{i}" for i in range(len(names))]
    typed = [f"t{i}" for i in range(len(names))]
    if names:
        add(f"    {', '.join(f'n{i}' for i in range(len(names)))}, = attributes")
        add("    if " + " or ".join(f"n{i} != {name!r}" for i, name in enumerate(names)) + ": raise _Unusual")
        add(f"    {', '.join(typed)}, = attributes.values()")
        add("    if " + " or ".join(f"type({t}) is not dict" for t in typed)
            + f" or {' + '.join(f'len({t})' for t in typed)} != {len(names)}: raise _Unusual")
        add("    " + "; ".join(f"{v} = {t}[{kind!r}]" for v, t, kind in zip(values, typed, kinds)))
        add("    if " + " or ".join(f"type({v}) is not {_KIND_CLASSES[kind].__name__}"
                                   for v, kind in zip(values, kinds)) + ": raise _Unusual")
        for v, kind in zip(values, kinds):
            if kind == "version":
                add(f"    {v} = _versions[{v}]")
            elif kind == "strings":  # a string's subclass too, which the general reading keeps as it is
                add(f"    if not {v}: raise _Unusual")
                add(f"    _join({v})")  # TypeError unless every item is a string
                add(f"    {v} = {v}[:]")
            elif kind == "versions":
                add(f"    {v} = _version_list({v})")
            elif kind in _PLAIN_LISTS:
                add(f"    {v} = _plain_list({kind!r}, {v})")
    else:
        add("    if attributes: raise _Unusual")
    quantities = [f"q{i}" for i in range(len(capacity_names))]
    if capacity_names:
        add(f"    {', '.join(f'c{i}' for i in range(len(capacity_names)))}, = capacity")
        add("    if " + " or ".join(f"c{i} != {name!r}" for i, name in enumerate(capacity_names)) + ": raise _Unusual")
        add(f"    {', '.join(f'e{i}' for i in range(len(capacity_names)))}, = capacity.values()")
        add("    if " + " or ".join(f"type(e{i}) is not dict or len(e{i}) != 1"
                                   for i in range(len(capacity_names))) + ": raise _Unusual")
        add("    " + "; ".join(f"{q} = e{i}['value']" for i, q in enumerate(quantities)))
        add("    if " + " or ".join(f"type({q}) is not str" for q in quantities) + ": raise _Unusual")
        add("    " + "; ".join(f"{q} = _quantities[{q}]" for q in quantities))
    else:
        add("    if capacity: raise _Unusual")
    add(f"    attributes = {_domain_maps(names, values, driver)}")
    add(f"    capacity = {_domain_maps(capacity_names, quantities, driver)}")
    # Taints, counters and binding conditions (DynamicMIG publishes counters on every device) are
    # read as the general reading reads them; an error there gives up (ValueError).
    placement = "_placement(raw, raw, '')" if not _PLACEMENT_KEYS.isdisjoint(fields) else "_NO_PLACEMENT"
    add("    device = _new(Device)")
    add(f"    _set_fields(device, '__dict__', {{'driver': {driver!r}, 'name': name, 'pool': pool,"
        " 'attributes': attributes, 'capacity': capacity, 'allow_multiple_allocations': False,"
        " 'node_name': node, 'node_scope': scope, 'slice_name': slice_name, 'request_policies': {},"
        f" 'placement': {placement},"
        f" 'id': {driver + '/'!r} + pool + '/' + name}})")
    add("    return device")
    namespace: dict[str, Any] = {
        "_Unusual": _Unusual, "_versions": _versions, "_quantities": _quantities, "_join": "".join,
        "_plain_list": _plain_list, "_version_list": _version_list, "_new": object.__new__, "_NOTHING": _NOTHING,
        "_set_fields": _set_fields, "Device": Device, "_NO_PLACEMENT": NO_PLACEMENT_FACTS,
        "_placement": _placement,
    }
    exec("\n".join(lines), namespace)  # noqa: S102 - the code is made here, from names written with repr()
    return namespace["read"]


def _domain_maps(names: tuple[str, ...], values: list[str], driver: str) -> str:
    """Code for ``domain -> name -> value`` as _read_attributes builds it: domains in order of first
    appearance, and in each the names in order of first appearance with the last value given
    (``productName`` and ``gpu.nvidia.com/productName`` are one name)."""
    domains: dict[str, dict[str, str]] = {}
    for qualified, value in zip(names, values):
        domain, short = _split(qualified, driver)
        domains.setdefault(domain, {})[short] = value
    return "{" + ", ".join(
        f"{domain!r}: {{" + ", ".join(f"{short!r}: {value}" for short, value in shorts.items()) + "}"
        for domain, shorts in domains.items()
    ) + "}"


def _version_list(value: Any) -> list:
    """A ``versions`` attribute (DRAListTypeAttributes) parsed; _Unusual for anything else."""
    if value.__class__ is not list or not value:
        raise _Unusual
    for item in value:
        if item.__class__ is not str:
            raise _Unusual
    return [_versions[item] for item in value]


_NOTHING: Mapping[str, Any] = {}


def _is_mapping(value: Any) -> bool:
    return value.__class__ is dict or isinstance(value, Mapping)  # the ABC check is slow: dicts first


def _where(slice_name: str, index: int) -> str:
    """Where a device is, for messages (built only when there is something to say)."""
    return f"ResourceSlice {slice_name}: spec.devices[{index}]"


def _split(qualified: Any, driver: str) -> tuple[str, str]:
    name = qualified if qualified.__class__ is str else str(qualified)
    slash = name.find("/")
    if slash < 0:
        return driver, name
    return name[:slash], name[slash + 1:]


_PLAIN_KINDS = {"string": str, "int": int, "bool": bool}  # values used as they are
_PLAIN_LISTS = {"strings": str, "ints": int, "bools": bool}  # lists of them (DRAListTypeAttributes)


def _plain_list(kind: Any, value: Any) -> list:
    """A list attribute (DRAListTypeAttributes) of plain items, copied; _Unusual for anything else."""
    item_class = _PLAIN_LISTS.get(kind)
    if item_class is None or value.__class__ is not list or not value:
        raise _Unusual
    for item in value:
        if item.__class__ is not item_class:
            raise _Unusual
    return list(value)


def _read_attributes(raw: Mapping[str, Any], driver: str, slice_name: str, index: int,
                     names: dict[str, tuple[str, str]]) -> dict[str, dict[str, AttributeValue]]:
    """A device's attributes as ``domain -> name -> value``, every value checked as the API server
    checks it (an invalid slice is refused even where no selector reads the value).  ``names``
    remembers each qualified name's (domain, name) split for this slice's devices."""
    result: dict[str, dict[str, AttributeValue]] = {}
    for qualified, typed in raw.items():
        value: Any = _NOTHING
        if typed.__class__ is dict and len(typed) == 1:
            for kind, raw_value in typed.items():
                if _PLAIN_KINDS.get(kind) is raw_value.__class__:
                    value = raw_value
                elif kind == "version" and raw_value.__class__ is str:
                    try:
                        value = _versions[raw_value]
                    except InvalidValue:
                        pass  # _attribute_value words the error
                elif raw_value.__class__ is list and raw_value:
                    item_class = _PLAIN_LISTS.get(kind)
                    if item_class is not None and all(item.__class__ is item_class for item in raw_value):
                        value = list(raw_value)
        if value is _NOTHING:
            value = _attribute_value(typed, f"{_where(slice_name, index)}.attributes.{qualified}")
        split = names.get(qualified)
        if split is None:
            split = names[qualified] = _split(qualified, driver)
        domain, name = split
        bucket = result.get(domain)
        if bucket is None:
            bucket = result[domain] = {}
        bucket[name] = value
    return result


def _parse_quantity(text: str) -> Quantity:
    # As the API server read it (Quantity.UnmarshalJSON trims the text); remembered untrimmed (in
    # _quantities), so that a repeated text costs one look-up.
    return Quantity.parse(text.strip())


class _Parsed(dict):
    """Text -> parsed value, parsed on first sight and remembered: slices repeat the same few values
    (one product, one memory size) thousands of times, and both parsers return immutable values.
    A subscript costs a sixth of an lru_cache call (explain reads 3 versions and a quantity per
    device).  An invalid text raises InvalidValue (a ValueError) and is not kept.  Forgets
    everything past 4,096 texts."""

    def __init__(self, parse: Any) -> None:
        super().__init__()
        self.parse = parse

    def __missing__(self, text: str) -> Any:
        if len(self) >= 4096:
            self.clear()
        value = self[text] = self.parse(text)
        return value


_versions = _Parsed(Semver.parse)  # both readings of a slice use these
_quantities = _Parsed(_parse_quantity)


_LIST_KINDS = {"ints": "int", "bools": "bool", "strings": "string", "versions": "version"}
# The Python class of each kind's value as a slice gives it (the quick reader's type checks).
_KIND_CLASSES = {**_PLAIN_KINDS, "version": str, **dict.fromkeys(_LIST_KINDS, list)}


def _attribute_value(typed: Any, where: str) -> AttributeValue:
    if not isinstance(typed, Mapping) or len(typed) != 1:
        raise InvalidResourceSlice(
            f"{where}: must have exactly one of int, bool, string, version (or, with the "
            "DRAListTypeAttributes feature gate, ints, bools, strings, versions)"
        )
    (kind, value), = typed.items()
    if kind in _LIST_KINDS:
        if not isinstance(value, list) or not value:
            raise InvalidResourceSlice(f"{where}: {kind} must be a non-empty list")
        return [_attribute_value({_LIST_KINDS[kind]: item}, f"{where}.{kind}[{i}]") for i, item in enumerate(value)]
    if kind == "string" and isinstance(value, str):
        return value
    if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == "bool" and isinstance(value, bool):
        return value
    if kind == "version" and isinstance(value, str):
        try:
            return _versions[value]
        except InvalidValue as err:
            raise InvalidResourceSlice(f"{where}: version {value!r} is not semantic versioning 2.0: {err}") from None
    raise InvalidResourceSlice(
        f"{where}: {kind}: {value!r} is not a valid attribute value "
        "(int, bool, string, version, or a non-empty list as ints, bools, strings, versions)"
    )


def _capacity(raw: Mapping[str, Any], driver: str, slice_name: str, index: int, names: dict[str, tuple[str, str]]
              ) -> tuple[dict[str, dict[str, Quantity]], dict[str, Mapping[str, Any]]]:
    """A device's capacity as ``domain -> name -> quantity``, and its request policies
    (consumable capacity, KEP-5075) by the names the slice gives, in one pass over the entries."""
    result: dict[str, dict[str, Quantity]] = {}
    policies: dict[str, Mapping[str, Any]] = {}
    for qualified, entry in raw.items():
        if entry.__class__ is dict or isinstance(entry, Mapping):
            # v1beta1+ wraps the quantity as {value: ...}; v1alpha3 stored it directly.
            text = entry.get("value")
            policy = entry.get("requestPolicy")
            if policy is not None:
                _check_request_policy(policy, f"{_where(slice_name, index)}.capacity.{qualified}.requestPolicy")
                policies[str(qualified)] = policy
        else:
            text = entry
        try:
            quantity = _quantities[text] if text.__class__ is str else Quantity.parse(str(text))
        except InvalidValue as err:
            where = f"{_where(slice_name, index)}.capacity.{qualified}"
            raise InvalidResourceSlice(f"{where}: {text!r}: {err}") from None
        split = names.get(qualified)
        if split is None:
            split = names[qualified] = _split(qualified, driver)
        domain, name = split
        bucket = result.get(domain)
        if bucket is None:
            bucket = result[domain] = {}
        bucket[name] = quantity
    return result, policies


def _check_request_policy(policy: Any, where: str) -> None:
    """A capacity's requestPolicy (KEP-5075) has the shape the API server validates
    (kubernetes/kubernetes pkg/apis/resource/validation/validation.go, validateRequestPolicy):
    validValues a list of quantities; validRange a map with a min, and a max and a step greater than
    zero when given.  The engine rounds requests with them, so a slice read from a file nobody
    validated is refused here, naming the field, instead of failing where a request meets it."""
    if not _is_mapping(policy):
        raise InvalidResourceSlice(f"{where} must be a map (default, validValues or validRange)")
    if policy.get("default") is not None:
        _policy_quantity(policy["default"], f"{where}.default")
    valid_values = policy.get("validValues")
    if valid_values is not None:
        if not isinstance(valid_values, list):
            raise InvalidResourceSlice(f"{where}.validValues must be a list of quantities")
        for position, value in enumerate(valid_values):
            _policy_quantity(value, f"{where}.validValues[{position}]")
    valid_range = policy.get("validRange")
    if valid_range is not None:
        if not _is_mapping(valid_range):
            raise InvalidResourceSlice(f"{where}.validRange must be a map (min, max, step)")
        if valid_range.get("min") is None:
            raise InvalidResourceSlice(f"{where}.validRange.min is required when validRange is given")
        _policy_quantity(valid_range["min"], f"{where}.validRange.min")
        if valid_range.get("max") is not None:
            _policy_quantity(valid_range["max"], f"{where}.validRange.max")
        if valid_range.get("step") is not None and _policy_quantity(valid_range["step"], f"{where}.validRange.step").value <= 0:
            raise InvalidResourceSlice(f"{where}.validRange.step: {valid_range['step']!r}: must be greater than zero")


def _policy_quantity(value: Any, where: str) -> Quantity:
    try:
        return Quantity.read(value)
    except InvalidValue as err:
        raise InvalidResourceSlice(f"{where}: {value!r}: {err}") from None
