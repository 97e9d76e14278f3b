#!/usr/bin/env python3
"""Transcribe the structured allocator's shared test table into data for tests/test_allocator_upstream.py.

    scripts/port_allocator_cases.py ALLOCATOR_TESTING_GO > tests/data/allocator/upstream_cases.json

ALLOCATOR_TESTING_GO is k8s.io/dynamic-resource-allocation
structured/internal/allocatortesting/allocator_testing.go (the commit is in the output).  The
table is Go composite literals built with the file's helper functions (claimWithRequest,
sliceWithDevices, allocationResult...): this evaluates that subset of Go (literals, calls,
selectors, the few statements of its closures) with the helpers re-stated below, and writes each
case's claims, classes, slices and node as resource.k8s.io/v1 objects, and its expectation (the
devices per claim, no allocation, or the error's substring).  Cases it cannot evaluate are
listed under "not_ported" with the reason.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from typing import Any

# ---- tokens ------------------------------------------------------------------------------------

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r]+) | (?P<nl>\n) | (?P<comment>//[^\n]*|/\*.*?\*/) |
    (?P<raw>`[^`]*`) | (?P<str>"(?:\\.|[^"\\])*") |
    (?P<num>\d+(?:\.\d+)?) | (?P<ident>[A-Za-z_][A-Za-z0-9_]*) |
    (?P<op>:=|\+\+|--|\+=|==|!=|<=|>=|&&|\|\||\.\.\.|[{}()\[\],:;.&*+\-=<>!/%])
""", re.S | re.X)


def tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise SyntaxError(f"cannot read {text[pos:pos + 30]!r}")
        pos = m.end()
        kind = m.lastgroup
        value = m.group()
        if kind in ("ws",) or (kind == "comment" and "\n" not in value):
            continue
        if kind == "nl" or kind == "comment":
            # Go's automatic semicolon
            if tokens and (tokens[-1][0] in ("ident", "num", "str", "raw") or tokens[-1][1] in (")", "]", "}", "++", "--")):
                tokens.append(("op", ";"))
            continue
        tokens.append((kind, value))
    return tokens


def _go_string(kind: str, text: str) -> str:
    if kind == "raw":
        return text[1:-1]
    return json.loads(text)


# ---- values ----------------------------------------------------------------------------------------

class Field(str):
    """A composite literal's key that is a struct field name."""


class Composite:
    def __init__(self, type_name: str, items: list[tuple[Any, Any]]) -> None:
        self.type_name = type_name
        self.items = items


# ---- parser + evaluator ------------------------------------------------------------------------------

class Unsupported(Exception):
    pass


class Go:
    def __init__(self, tokens: list[tuple[str, str]], env: dict[str, Any]) -> None:
        self.t = tokens
        self.i = 0
        self.env = env

    def peek(self, k: int = 0) -> tuple[str, str]:
        return self.t[self.i + k] if self.i + k < len(self.t) else ("eof", "")

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise SyntaxError(f"expected {value!r}, got {tok[1]!r} near {self.context()}")
        self.i += 1
        return tok

    def context(self) -> str:
        return " ".join(v for _, v in self.t[max(0, self.i - 8): self.i + 8])

    def skip_semis(self) -> None:
        while self.peek()[1] == ";":
            self.i += 1

    # types are read as text: only composite literals and func results need them
    def read_type(self) -> str:
        value = self.peek()[1]
        if value == "*":
            self.i += 1
            return "*" + self.read_type()
        if value == "[":
            self.i += 1
            size = "" if self.peek()[1] == "]" else self.take()[1]
            self.take("]")
            return f"[{size}]" + self.read_type()
        if value == "map":
            self.i += 1
            self.take("[")
            key = self.read_type()
            self.take("]")
            return f"map[{key}]" + self.read_type()
        name = self.take()[1]
        while self.peek()[1] == ".":
            self.i += 1
            name += "." + self.take()[1]
        return name

    def expression(self) -> Any:
        left = self.unary()
        while self.peek()[1] in ("+", "-", "*", "/", "==", "!=", "&&", "||"):
            op = self.take()[1]
            right = self.unary()
            if op == "+":
                left = left + right
            elif op == "-":
                left = left - right
            elif op == "*":
                left = left * right
            elif op == "/":
                left = left // right
            elif op == "==":
                left = left == right
            elif op == "!=":
                left = left != right
            else:
                raise Unsupported(f"operator {op}")
        return left

    def unary(self) -> Any:
        value = self.peek()[1]
        if value in ("&", "*"):
            self.i += 1
            return self.unary()
        if value == "-":
            self.i += 1
            return -self.unary()
        if value == "!":
            self.i += 1
            return not self.unary()
        return self.primary()

    def primary(self) -> Any:
        kind, value = self.peek()
        if kind in ("str", "raw"):
            self.i += 1
            result: Any = _go_string(kind, value)
        elif kind == "num":
            self.i += 1
            result = float(value) if "." in value else int(value)
        elif value == "(":
            self.i += 1
            result = self.expression()
            self.take(")")
        elif value == "func":
            result = self.func_literal()
        elif value in ("[", "map"):
            type_name = self.read_type()
            result = self.composite(type_name)
        elif kind == "ident":
            name = self.qualified()
            if self.peek()[1] == "[" and name in ("sets.New",):
                self.take("[")
                self.read_type()
                self.take("]")
            if self.peek()[1] == "{" and (name not in self.env or isinstance(self.env.get(name), type)):
                result = self.composite(name)
            elif name in self.env:
                result = self.env[name]
            elif name in ("nil",):
                result = None
            elif name in ("true", "false"):
                result = name == "true"
            else:
                result = Missing(name)
        else:
            raise SyntaxError(f"unexpected {value!r} near {self.context()}")
        return self.postfix(result)

    def qualified(self) -> str:
        name = self.take()[1]
        while self.peek()[1] == "." and self.peek(1)[0] == "ident" and name in _PACKAGES:
            self.i += 1
            name += "." + self.take()[1]
        return name

    def postfix(self, value: Any) -> Any:
        while True:
            tok = self.peek()[1]
            if tok == ".":
                self.i += 1
                attr = self.take()[1]
                if self.peek()[1] == "(":
                    args = self.arguments()
                    value = call_method(value, attr, args)
                else:
                    value = get_field(value, attr)
            elif tok == "(":
                args = self.arguments()
                if isinstance(value, Missing):
                    raise Unsupported(f"unknown function {value.name}")
                value = value(*args)
            elif tok == "[":
                self.i += 1
                index = self.expression()
                self.take("]")
                value = value[index]
            else:
                return value

    def arguments(self) -> list[Any]:
        self.take("(")
        args = []
        while self.peek()[1] != ")":
            self.skip_semis()
            if self.peek()[1] == ")":
                break
            arg = self.expression()
            if self.peek()[1] == "...":
                self.i += 1
                args.extend(arg or [])
            else:
                args.append(arg)
            if self.peek()[1] == ",":
                self.i += 1
            self.skip_semis()
        self.take(")")
        return args

    def composite(self, type_name: str) -> Any:
        self.take("{")
        items: list[tuple[Any, Any]] = []
        while True:
            self.skip_semis()
            if self.peek()[1] == "}":
                break
            if self.peek()[1] == "{":
                first: Any = self.composite(_element_type(type_name, 0))
            elif self.peek()[0] == "ident" and self.peek(1)[1] == ":" and not _is_map(type_name):
                first = Field(self.take()[1])
            else:
                first = self.expression()
            if self.peek()[1] == ":":
                self.i += 1
                self.skip_semis()
                if self.peek()[1] == "{":
                    second = self.composite(_element_type(type_name, 1))
                else:
                    second = self.expression()
                items.append((first, second))
            else:
                items.append((None, first))
            self.skip_semis()
            if self.peek()[1] == ",":
                self.i += 1
        self.take("}")
        return build(type_name, items)

    def func_literal(self) -> Any:
        self.take("func")
        self.take("(")
        self.take(")")
        self.read_type()
        body_start = self.i
        self.skip_block()
        body_end = self.i
        self.take("(")
        self.take(")")
        return Go(self.t[body_start + 1: body_end - 1], dict(self.env)).run_statements()

    def skip_block(self) -> None:
        self.take("{")
        depth = 1
        while depth:
            value = self.take()[1]
            depth += {"{": 1, "}": -1}.get(value, 0)

    def run_statements(self) -> Any:
        while self.i < len(self.t):
            self.skip_semis()
            if self.i >= len(self.t):
                break
            if self.peek()[1] == "return":
                self.i += 1
                return self.expression()
            if self.peek()[1] == "var":
                self.i += 1
                name = self.take()[1]
                self.read_type()
                self.env[name] = None
                continue
            if self.peek()[0] == "ident" and self.peek(1)[1] == ":=":
                name = self.take()[1]
                self.take(":=")
                self.env[name] = self.expression()
                continue
            start = self.i
            target, key = self.lvalue()
            op = self.take()[1]
            if op == "++":
                target[key] += 1
            elif op == "--":
                target[key] -= 1
            elif op == "+=":
                target[key] += self.expression()
            elif op == "=":
                target[key] = self.expression()
            else:
                self.i = start
                raise Unsupported(f"statement near {self.context()}")
        return None

    def lvalue(self) -> tuple[Any, Any]:
        name = self.take()[1]
        holder: Any = self.env
        key: Any = name
        while self.peek()[1] in (".", "["):
            container = holder[key]
            if self.take()[1] == ".":
                holder, key = container, self.take()[1]
                if isinstance(holder, dict) and key not in holder and key in _EMBEDDED:
                    holder = holder.setdefault(_EMBEDDED[key], {})
            else:
                index = self.expression()
                self.take("]")
                holder, key = container, index
            if isinstance(holder, dict) and key not in holder and self.peek()[1] in (".", "["):
                holder[key] = {}
        return holder, key


class Missing:
    def __init__(self, name: str) -> None:
        self.name = name


_PACKAGES = {"slices", "resourceapi", "resource", "ptr", "fmt", "gomega", "v1", "metav1", "internal", "sets", "apitypes",
             "types", "runtime", "cel"}
_EMBEDDED = {"Name": "ObjectMeta"}
_MAP_TYPES = {"ConsumedCapacity"}


def _element_type(type_name: str, position: int) -> str:
    """The type of an elided composite inside ``type_name``: a slice's element, a map's key (0) or value (1)."""
    if type_name.startswith("[]"):
        return type_name[2:]
    if type_name.startswith("map["):
        depth = 0
        for i, ch in enumerate(type_name):
            depth += {"[": 1, "]": -1}.get(ch, 0)
            if depth == 0 and i > 3:
                return type_name[4:i] if position == 0 else type_name[i + 1:]
    return ""


def _is_map(type_name: str) -> bool:
    return type_name.startswith("map[") or type_name.lstrip("*").split(".")[-1] in _MAP_TYPES


def build(type_name: str, items: list[tuple[Any, Any]]) -> Any:
    base = type_name.lstrip("*").split(".")[-1]
    if type_name.startswith("[]"):
        return [value for _, value in items]
    if type_name.startswith("map[") or base in _MAP_TYPES:
        return {key: value for key, value in items}
    result = {}
    for key, value in items:
        if key is None:
            raise Unsupported(f"positional struct literal {type_name}")
        result[str(key)] = value
    return result


def get_field(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        if name in value:
            return value[name]
        if name in _EMBEDDED and _EMBEDDED[name] in value:
            return value[_EMBEDDED[name]].get(name)
        return None
    raise Unsupported(f"field {name} of {type(value).__name__}")


def call_method(value: Any, name: str, args: list[Any]) -> Any:
    if name in ("obj",):
        return value
    if name == "DeepCopy":
        return copy.deepcopy(value)
    method = METHODS.get(name)
    if method is None:
        raise Unsupported(f"method {name}")
    return method(copy.deepcopy(value), *args)


# ---- the helpers of allocator_testing.go, re-stated on Go-named maps -----------------------------------

def sprintf(fmt: str, *args: Any) -> str:
    out = iter(args)

    def one(m: re.Match) -> str:
        verb = m.group()[-1]
        arg = next(out)
        if verb == "q":
            return json.dumps(arg)
        if verb == "v" and isinstance(arg, bool):
            return "true" if arg else "false"
        return str(arg)
    return re.sub(r"%[-+ #0]*\d*[sdvq]", one, fmt)


def node(name: str, region: str) -> dict:
    return {"ObjectMeta": {"Name": name, "Labels": {"region": region, "planet": "earth"}}}


def device_class(name: str, driver: str) -> dict:
    return {"ObjectMeta": {"Name": name}, "Spec": {"Selectors": [{"CEL": {"Expression": f'device.driver == "{driver}"'}}]}}


def class_multi(name: str, driver: str, multi: bool) -> dict:
    expr = f'device.driver == "{driver}" && device.allowMultipleAllocations == {"true" if multi else "false"}'
    return {"ObjectMeta": {"Name": name}, "Spec": {"Selectors": [{"CEL": {"Expression": expr}}]}}


def device_configuration(driver: str, attribute: str) -> dict:
    return {"Opaque": {"Driver": driver, "Parameters": {attribute: attribute + "Value"}}}


def class_with_config(name: str, driver: str, attribute: str) -> dict:
    c = device_class(name, driver)
    c["Spec"]["Config"] = [{"DeviceConfiguration": device_configuration(driver, attribute)}]
    return c


def claim_with_requests(name: str, constraints: Any, *requests: dict) -> dict:
    spec: dict = {"Requests": list(requests)}
    if constraints:
        spec["Constraints"] = constraints
    return {"ObjectMeta": {"Name": name}, "Spec": {"Devices": spec}}


def request(name: str, cls: str, count: int, *selectors: dict) -> dict:
    exactly = {"Count": count, "AllocationMode": "ExactCount", "DeviceClassName": cls}
    if selectors:
        exactly["Selectors"] = list(selectors)
    return {"Name": name, "Exactly": exactly}


def all_device_request(name: str, cls: str) -> dict:
    return {"Name": name, "Exactly": {"AllocationMode": "All", "DeviceClassName": cls}}


def sub_request(name: str, cls: str, count: int, *fields: dict) -> dict:
    sub: dict = {"Name": name, "Count": count, "AllocationMode": "ExactCount", "DeviceClassName": cls}
    for f in fields:
        sub.setdefault("Selectors" if "CEL" in f else "Tolerations", []).append(f)
    return sub


def capacity_requests(q: Any) -> dict:
    return {"Requests": {"capacity-0": q} if q is not None else {}}


def with_capacity_request(r: dict, q: Any) -> dict:
    (r["Exactly"] if "Exactly" in r else r)["Capacity"] = capacity_requests(q)
    return r


def with_selectors(r: dict, *selectors: dict) -> dict:
    r["Exactly"]["Selectors"] = list(selectors)
    return r


def with_allocation_mode(r: dict, mode: str) -> dict:
    r["AllocationMode"] = mode
    return r


def request_with_prioritized_list(name: str, *subs: dict) -> dict:
    return {"Name": name, "FirstAvailable": list(subs)}


def claim_with_request(name: str, req: str, cls: str, *constraints: dict) -> dict:
    return claim_with_requests(name, list(constraints), request(req, cls, 1))


def bare_claim(name: str) -> dict:
    return {"ObjectMeta": {"Name": name}, "Spec": {"Devices": {}}}


def with_tolerations(c: dict, *tolerations: dict) -> dict:
    for r in c["Spec"]["Devices"].get("Requests") or []:
        r["Exactly"].setdefault("Tolerations", []).extend(tolerations)
    return c


def with_requests(c: dict, *requests: dict) -> dict:
    c["Spec"]["Devices"]["Requests"] = list(requests)
    return c


def with_constraints(c: dict, *constraints: dict) -> dict:
    c["Spec"]["Devices"]["Constraints"] = list(constraints)
    return c


def with_configs(c: dict, configs: list) -> dict:
    c["Spec"]["Devices"]["Config"] = configs
    return c


def claim_with_device_config(name: str, req: str, cls: str, driver: str, attribute: str) -> dict:
    c = claim_with_request(name, req, cls)
    c["Spec"]["Devices"]["Config"] = [{"DeviceConfiguration": device_configuration(driver, attribute)}]
    return c


def device_claim_config(requests: list, config: dict) -> dict:
    return {"Requests": requests, "DeviceConfiguration": config}


def device(name: str, capacity: Any, attributes: Any) -> dict:
    d: dict = {"Name": name}
    if attributes:
        d["Attributes"] = attributes
    if isinstance(capacity, dict):
        d["Capacity"] = {k: {"Value": v} for k, v in capacity.items()}
    elif capacity == "fromCounters":
        d["_fromCounters"] = True
    return d


def with_taints(d: dict, *taints: dict) -> dict:
    d.setdefault("Taints", []).extend(taints)
    d.pop("_fromCounters", None)
    return d


def with_counter_consumption(d: dict, *consumption: dict) -> dict:
    d.setdefault("ConsumesCounters", []).extend(consumption)
    if d.pop("_fromCounters", False):
        d["Capacity"] = {name: {"Value": c["Value"]} for dcc in d["ConsumesCounters"] for name, c in dcc["Counters"].items()}
    return d


def with_node_selection(d: dict, selection: Any) -> dict:
    d.pop("_fromCounters", None)
    if isinstance(selection, dict):
        d["NodeSelector"] = selection
    elif selection == "nodeSelectionAll":
        d["AllNodes"] = True
    else:
        d["NodeName"] = selection
    return d


def with_binding_conditions(d: dict, conditions: list, failures: list) -> dict:
    d.pop("_fromCounters", None)
    d["BindingConditions"] = conditions
    d["BindingFailureConditions"] = failures
    return d


def with_binds_to_node(d: dict, binds: bool) -> dict:
    d.pop("_fromCounters", None)
    d["BindsToNode"] = binds
    return d


def with_allow_multiple(d: dict) -> dict:
    d.pop("_fromCounters", None)
    d["AllowMultipleAllocations"] = True
    return d


def with_policy_range(d: dict, capacity: dict) -> dict:
    d.pop("_fromCounters", None)
    caps = d.setdefault("Capacity", {})
    for name, q in capacity.items():
        caps[name] = {"Value": q, "RequestPolicy": {"Default": "2", "ValidRange": {"Min": "2", "Step": "2", "Max": "4"}}}
    return d


def with_policy_values(d: dict, default: Any, capacity: dict, additional: list) -> dict:
    d.pop("_fromCounters", None)
    caps = d.setdefault("Capacity", {})
    for name, q in capacity.items():
        caps[name] = {"Value": q, "RequestPolicy": {"Default": default, "ValidValues": [default, *(additional or [])]}}
    return d


def device_counter_consumption(counter_set: str, counters: dict | None) -> dict:
    return {"CounterSet": counter_set, "Counters": {k: {"Value": v} for k, v in (counters or {}).items()}}


def resource_pool(name: str, count: int) -> dict:
    return {"Name": name, "ResourceSliceCount": count, "Generation": 1}


def slice_(name: str, selection: Any, pool: Any, driver: str) -> dict:
    pool = pool if isinstance(pool, dict) else {"Name": pool, "ResourceSliceCount": 1, "Generation": 1}
    spec: dict = {"Driver": driver, "Pool": pool}
    if isinstance(selection, dict):
        spec["NodeSelector"] = selection
    elif selection == "nodeSelectionAll":
        spec["AllNodes"] = True
    elif selection == "nodeSelectionPerDevice":
        spec["PerDeviceNodeSelection"] = True
    else:
        spec["NodeName"] = selection
    return {"ObjectMeta": {"Name": name}, "Spec": spec}


def slice_with_devices(name: str, selection: Any, pool: Any, driver: str, *devices: dict) -> dict:
    s = slice_(name, selection, pool, driver)
    if devices:
        s["Spec"]["Devices"] = [{k: v for k, v in d.items() if k != "_fromCounters"} for d in devices]
    return s


def slice_with_counter_sets(name: str, selection: Any, pool: Any, driver: str, *sets: dict) -> dict:
    s = slice_(name, selection, pool, driver)
    s["Spec"]["SharedCounters"] = list(sets)
    return s


def counter_set(name: str, counters: dict | None) -> dict:
    return {"Name": name, "Counters": {k: {"Value": v} for k, v in (counters or {}).items()}}


def device_allocation_result(req: str, driver: str, pool: str, dev: str, admin: bool, *tolerations: dict) -> dict:
    r: dict = {"Request": req, "Driver": driver, "Pool": pool, "Device": dev}
    if tolerations:
        r["Tolerations"] = list(tolerations)
    if admin:
        r["AdminAccess"] = True
    return r


def device_request_allocation_result(req: str, driver: str, pool: str, dev: str) -> dict:
    return {"Request": req, "Driver": driver, "Pool": pool, "Device": dev}


def with_consumed_capacity(r: dict, share_id: Any, consumed: dict) -> dict:
    if share_id is not None:
        r["ShareID"] = share_id
    if consumed is not None:
        r["ConsumedCapacity"] = consumed
    return r


def result_with_binding(req: str, driver: str, pool: str, dev: str, conditions: list, failures: list,
                        *tolerations: dict) -> dict:
    r = device_request_allocation_result(req, driver, pool, dev)
    r["BindingConditions"] = conditions
    r["BindingFailureConditions"] = failures
    if tolerations:
        r["Tolerations"] = list(tolerations)
    return r


def multiple_results(req: str, driver: str, pool: str, count: int, start: int) -> list:
    return [device_allocation_result(req, driver, pool, f"device-{i}", False) for i in range(start, start + count)]


def node_label_selector(key: str, *values: str) -> dict:
    return {"NodeSelectorTerms": [{"MatchExpressions": [{"Key": key, "Operator": "In", "Values": list(values)}]}]}


def local_node_selector(name: str) -> dict:
    return {"NodeSelectorTerms": [{"MatchFields": [{"Key": "metadata.name", "Operator": "In", "Values": [name]}]}]}


def allocation_result(selector: Any, *results: dict) -> dict:
    return {"NodeSelector": selector, "Devices": {"Results": list(results)}}


def allocation_result_with_config(selector: Any, driver: str, source: str, attribute: str, *results: dict) -> dict:
    return {"NodeSelector": selector, "Devices": {"Results": list(results), "Config": [
        {"Source": source, "DeviceConfiguration": device_configuration(driver, attribute)}]}}


def allocation_result_with_configs(selector: Any, results: list, configs: list) -> dict:
    return {"NodeSelector": selector, "Devices": {"Results": results, "Config": configs}}


def objects(*items: Any) -> list:
    return list(items)


METHODS = {
    "withCapacityRequest": with_capacity_request, "withSelectors": with_selectors,
    "withAllocationMode": with_allocation_mode, "withTolerations": with_tolerations, "withRequests": with_requests,
    "withConstraints": with_constraints, "withConfigs": with_configs, "withTaints": with_taints,
    "withDeviceCounterConsumption": with_counter_consumption, "withNodeSelection": with_node_selection,
    "withBindingConditions": with_binding_conditions, "withBindsToNode": with_binds_to_node,
    "withAllowMultipleAllocations": with_allow_multiple, "withCapacityRequestPolicyRange": with_policy_range,
    "withCapacityRequestPolicyValidValues": with_policy_values, "withConsumedCapacity": with_consumed_capacity,
}


def environment(go_source: str) -> dict[str, Any]:
    env: dict[str, Any] = {
        "fmt.Sprintf": sprintf, "node": node, "class": device_class,
        "classWithAllowMultipleAllocations": class_multi, "deviceConfiguration": device_configuration,
        "classWithConfig": class_with_config, "claimWithRequests": claim_with_requests, "request": request,
        "deviceRequest": lambda n, c, k: request(n, c, k), "allDeviceRequest": all_device_request,
        "subRequest": sub_request, "requestWithPrioritizedList": request_with_prioritized_list,
        "claimWithRequest": claim_with_request, "claim": bare_claim, "claimWithDeviceConfig": claim_with_device_config,
        "deviceClaimConfig": device_claim_config, "device": device,
        "deviceCounterConsumption": device_counter_consumption, "slice": slice_,
        "sliceWithDevices": slice_with_devices, "sliceWithCounterSets": slice_with_counter_sets,
        "resourcePool": resource_pool, "sliceWithNoDevices": lambda *a: slice_with_devices(*a),
        "sliceWithOneDevice": lambda *a: slice_with_devices(*a, device("device-1", None, None)),
        "sliceWithMultipleDevices": lambda n, s, p, d, count: slice_with_devices(
            n, s, p, d, *(device(f"device-{i}", None, None) for i in range(count))),
        "counterSet": counter_set, "deviceAllocationResult": device_allocation_result,
        "deviceRequestAllocationResult": device_request_allocation_result,
        "deviceRequestAllocationResultWithBindingConditions": result_with_binding,
        "multipleDeviceAllocationResults": multiple_results, "capacityRequests": capacity_requests,
        "requirements": lambda q: {"capacity-0": q} if q is not None else {},
        "nodeLabelSelector": node_label_selector, "localNodeSelector": local_node_selector,
        "allocationResult": allocation_result, "allocationResultWithConfig": allocation_result_with_config,
        "allocationResultWithConfigs": allocation_result_with_configs, "objects": objects, "unwrap": objects,
        "unwrapResourceSlices": objects, "MakeDeviceID": lambda d, p, n: f"{d}/{p}/{n}",
        "internal.MakeSharedDeviceID": lambda i, s: f"{i}/{s}", "sets.New": lambda *a: list(a),
        "slices.Concat": lambda *lists: [x for part in lists for x in part],
        "gomega.MatchError": lambda m: m, "gomega.ContainSubstring": lambda s: {"error": s},
        "resource.MustParse": lambda s: s, "resource.NewQuantity": lambda n, _: str(n), "resource.BinarySI": "BinarySI",
        "resource.DecimalSI": "DecimalSI", "ptr.To": lambda v: v, "new": lambda v: v, "int64": lambda v: v,
        "int": lambda v: v, "string": lambda v: v, "apitypes.UID": lambda v: v,
        "resourceapi.FullyQualifiedName": lambda v: v, "resourceapi.QualifiedName": lambda v: v,
        "resourceapi.DeviceAllocationMode": lambda v: v,
        "resourceapi.DeviceAllocationModeAll": "All", "resourceapi.DeviceAllocationModeExactCount": "ExactCount",
        "resourceapi.AllocationResultsMaxSize": 32, "resourceapi.DeviceTaintEffectNone": "None",
        "resourceapi.DeviceTaintEffectNoSchedule": "NoSchedule", "resourceapi.DeviceTaintEffectNoExecute": "NoExecute",
        "resourceapi.DeviceTolerationOpExists": "Exists", "resourceapi.DeviceTolerationOpEqual": "Equal",
        "resourceapi.AllocationConfigSourceClaim": "FromClaim", "resourceapi.AllocationConfigSourceClass": "FromClass",
        "v1.NodeSelectorOpIn": "In", "internal.Stable": "stable", "internal.Incubating": "incubating",
        "internal.Experimental": "experimental", "fromCounters": "fromCounters",
        "nodeSelectionAll": "nodeSelectionAll", "nodeSelectionPerDevice": "nodeSelectionPerDevice",
        "fixedShareID": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
        "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4",
        "fieldNameKey": "metadata.name", "regionKey": "region", "planetKey": "planet", "planetValueEarth": "earth",
    }
    # The file's string constants (region1, classA, req0SubReq1, ...).
    block = re.search(r"\nconst \(\n(.*?)\n\)", go_source, re.S)
    for name, value in re.findall(r'^\t(\w+)\s*=\s*("[^"]*")', block.group(1) if block else "", re.M):
        env[name] = json.loads(value)
    return env


# ---- to resource.k8s.io/v1 ------------------------------------------------------------------------------

_JSON_NAMES = {"CEL": "cel", "IntValue": "int", "BoolValue": "bool", "StringValue": "string",
               "VersionValue": "version", "IntValues": "ints", "BoolValues": "bools", "StringValues": "strings",
               "VersionValues": "versions", "ObjectMeta": "metadata", "ShareID": "shareID"}
# Maps whose keys are data (attribute, capacity, counter names), not field names.
_DATA_MAPS = {"Attributes", "Capacity", "Counters", "Labels", "Requests_capacity", "ConsumedCapacity", "Parameters"}


def to_json(value: Any, parent: str = "") -> Any:
    if isinstance(value, dict):
        if parent in _DATA_MAPS:
            return {k: to_json(v, "") for k, v in value.items()}
        out = {}
        for key, item in value.items():
            name = _JSON_NAMES.get(key) or key[:1].lower() + key[1:]
            child = "Requests_capacity" if key == "Requests" and parent == "Capacity_request" else key
            if key == "Capacity" and parent in ("Exactly", "FirstAvailable"):
                child = "Capacity_request"
            out[name] = to_json(item, child)
        return out
    if isinstance(value, list):
        return [to_json(v, parent) for v in value]
    return value


def _object(kind: str, value: dict) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": kind, **to_json(value)}


def port(go_source: str) -> dict[str, Any]:
    start = go_source.index("func TestAllocator(")
    body_start = go_source.index("{\n", start) + 2
    table = go_source.index("testcases := map[string]AllocatorTestCase{", body_start)
    env = environment(go_source)
    Go(tokenize(go_source[body_start:table]), env).run_statements()
    end = go_source.index("RunTestAllocator(t, supportedFeatures", table)
    tokens = tokenize(go_source[table + len("testcases := map[string]AllocatorTestCase"):end])
    parser = Go(tokens, env)
    parser.take("{")
    cases: list[dict[str, Any]] = []
    not_ported: dict[str, str] = {}
    while True:
        parser.skip_semis()
        if parser.peek()[1] == "}":
            break
        name = _go_string(*parser.take())
        parser.take(":")
        start_index = parser.i
        try:
            fields = parser.composite("AllocatorTestCase")
            cases.append(case(name, fields))
        except (Unsupported, SyntaxError, KeyError, TypeError, AttributeError, IndexError, ValueError) as err:
            not_ported[name] = f"{type(err).__name__}: {err}"
            parser.i = start_index
            parser.skip_block()
        parser.skip_semis()
        if parser.peek()[1] == ",":
            parser.i += 1
    return {"cases": cases, "not_ported": not_ported}


def _per_claim(expect_results: Any) -> list | None:
    if not expect_results:
        return None
    return [to_json(r, "") for r in expect_results]


def case(name: str, fields: dict[str, Any]) -> dict[str, Any]:
    features = fields.get("features") or {}
    error = fields.get("expectError")
    return {
        "name": name,
        "features": sorted(k for k, v in features.items() if v),
        "claims": [_object("ResourceClaim", c) for c in fields.get("claimsToAllocate") or []],
        "classes": [_object("DeviceClass", c) for c in fields.get("classes") or []],
        "slices": [_object("ResourceSlice", s) for s in fields.get("slices") or []],
        "node": to_json(fields["node"]) if fields.get("node") else None,
        "allocatedDevices": fields.get("allocatedDevices") or [],
        "allocatedSharedDeviceIDs": fields.get("allocatedSharedDeviceIDs") or [],
        "allocatedCapacityDevices": {k: dict(v) for k, v in (fields.get("allocatedCapacityDevices") or {}).items()},
        "expectResults": _per_claim(fields.get("expectResults")),
        "expectError": error["error"] if isinstance(error, dict) else None,
        "expectSteps": fields.get("expectNumAllocateOneInvocations"),
        "expectStepsByChannel": fields.get("expectNumAllocateOneInvocationsByChannel") or {},
    }


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as source:
        result = port(source.read())
    result = {"source": "k8s.io/dynamic-resource-allocation structured/internal/allocatortesting/allocator_testing.go",
              "commit": "3d036712930cdac0b0d46c4c21316a78147c551f", **result}
    # One case a line: diffs of a re-transcription show which cases changed.
    cases = result.pop("cases")
    head = json.dumps(result)[:-1]
    sys.stdout.write(head + ', "cases": [\n' + ",\n".join(json.dumps(c) for c in cases) + "\n]}\n")
    print(f"{len(cases)} cases, {len(result['not_ported'])} not ported", file=sys.stderr)
    for name, why in result["not_ported"].items():
        print(f"  {name}: {why}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
