"""Recorded NVML: a node described in a JSON file (docs/inventory.md gives the format; the tests'
nodes are in tests/data/nvml/) served through pynvml's own functions, for support bundles, demos
and tests: `kubectl gpu inventory --nvml-recording FILE`.

The inventory code only sees ``pynvml``: this replaces the module's functions, keeps its real
error classes, and counts init/shutdown so tests can check NVML is released.  Any pynvml function
it does not replace still goes to the real library.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml

from kubectl_gpu.input_text import json_problem
from kubectl_gpu.inventory.nvml_reader import go_nvlib_bus_id

FUNCTIONS = (
    "nvmlInit",
    "nvmlShutdown",
    "nvmlSystemGetDriverVersion",
    "nvmlSystemGetCudaDriverVersion",
    "nvmlDeviceGetCount",
    "nvmlDeviceGetHandleByIndex",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetMinorNumber",
    "nvmlDeviceGetName",
    "nvmlDeviceGetBrand",
    "nvmlDeviceGetArchitecture",
    "nvmlDeviceGetCudaComputeCapability",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetPciInfo",
    "nvmlDeviceGetMigMode",
    "nvmlDeviceGetAddressingMode",
    "nvmlDeviceGetGpuInstanceProfileInfo",
    "nvmlDeviceGetGpuInstancePossiblePlacements",
    "nvmlDeviceGetMaxMigDeviceCount",
    "nvmlDeviceGetMigDeviceHandleByIndex",
    "nvmlDeviceGetGpuInstanceId",
    "nvmlDeviceGetComputeInstanceId",
    "nvmlDeviceGetGpuInstanceById",
    "nvmlGpuInstanceGetInfo",
    "nvmlGpuInstanceGetComputeInstanceById",
    "nvmlComputeInstanceGetInfo",
    "nvmlGpuInstanceGetComputeInstanceProfileInfo",
)


@dataclass(frozen=True)
class _Gpu:
    index: int


@dataclass(frozen=True)
class _Mig:
    gpu: int
    slot: int


@dataclass(frozen=True)
class _GpuInstance:
    gpu: int
    instance_id: int


@dataclass(frozen=True)
class _ComputeInstance:
    gpu: int
    gpu_instance_id: int
    instance_id: int


def _error(name: str) -> Exception:
    return getattr(pynvml, f"NVMLError_{name}")()


class RecordingError(ValueError):
    """The recording cannot be read; the message says which file and what to fix."""


def _read(record: dict[str, Any], key: str, where: str, call: str) -> Any:
    try:
        return record[key]
    except KeyError:
        raise RecordingError(f"{where} has no {key}, which {call} returns") from None


def recording_problem(node: Any) -> str | None:
    """What makes ``node`` no recording of the documented format (recording.schema.json, and
    error names pynvml does not have), or None."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(node))
    if error is not None:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
        return f"{where or 'the top level'}: {error.message}"
    named = [("nvmlInit", node.get("nvmlInit"))]
    for i, gpu in enumerate(node.get("gpus") or ()):
        named += [(f"gpus[{i}].failingCalls.{call}", name) for call, name in (gpu.get("failingCalls") or {}).items()]
        for j, mig in enumerate(gpu.get("migDevices") or ()):
            named += [(f"gpus[{i}].migDevices[{j}].failingCalls.{call}", name)
                      for call, name in (mig.get("failingCalls") or {}).items()]
    for where, name in named:
        if name and not isinstance(getattr(pynvml, f"NVMLError_{name}", None), type):
            return f"{where}: {name} is not an NVML error name (pynvml has no NVMLError_{name})"
    return None


def _schema() -> dict[str, Any]:
    return json.loads((Path(__file__).parent / "recording.schema.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class RecordedSysfs:
    """The sysfs facts a recording carries beside NVML (``gpus[i].sysfs``: pcieRoot, numaNode), by
    the PCI bus ID NVML reports for that GPU, so a replay never reads this machine's /sys."""

    by_bus_id: dict[str, dict[str, Any]]

    @classmethod
    def of(cls, node: dict[str, Any]) -> "RecordedSysfs":
        return cls({go_nvlib_bus_id(gpu["pciBusId"]): gpu.get("sysfs", {})
                    for gpu in node.get("gpus", ()) if "pciBusId" in gpu})

    def pcie_root(self, pci_bus_id: str) -> str | None:
        return self.by_bus_id.get(pci_bus_id, {}).get("pcieRoot")

    def numa_node(self, pci_bus_id: str) -> int | None:
        return self.by_bus_id.get(pci_bus_id, {}).get("numaNode")


class RecordedNvml:
    def __init__(self, node: dict[str, Any]) -> None:
        self.node = node
        self.inits = 0
        self.shutdowns = 0
        self.sysfs = RecordedSysfs.of(node)

    @classmethod
    def from_file(cls, path: str | Path) -> "RecordedNvml":
        text = ""  # what json_problem reads when the bytes are not even UTF-8
        try:
            text = Path(path).read_text(encoding="utf-8")
            node = json.loads(text)
        except OSError as exc:
            raise RecordingError(f"cannot read the NVML recording {path}: {exc.strerror or exc}") from None
        except ValueError as exc:  # JSON's own error, a byte that is not UTF-8, or Python's for a long integer
            raise RecordingError(f"the NVML recording {path} is not JSON: {json_problem(exc, text)}") from None
        if not isinstance(node, dict) or not ("gpus" in node or "nvmlInit" in node):
            raise RecordingError(f"the NVML recording {path} has neither gpus nor nvmlInit "
                                 "(see docs/inventory.md for the format)")
        problem = recording_problem(node)
        if problem:
            raise RecordingError(f"the NVML recording {path}: {problem} (see docs/inventory.md for the format)")
        return cls(node)

    def module(self) -> SimpleNamespace:
        """pynvml as the reader sees it, with the recording's functions: for one read, leaving the
        process's pynvml alone."""
        module = SimpleNamespace(**{name: getattr(pynvml, name) for name in dir(pynvml) if not name.startswith("__")})
        for name in FUNCTIONS:
            setattr(module, name, getattr(self, name))
        return module

    def install(self, setattr_: Any = setattr) -> "RecordedNvml":
        """Serve pynvml's functions from the recording (`setattr_`: e.g. pytest's
        monkeypatch.setattr, to undo it after a test)."""
        for name in FUNCTIONS:
            setattr_(pynvml, name, getattr(self, name))
        return self

    @property
    def balanced(self) -> bool:
        """Every successful nvmlInit was matched by an nvmlShutdown."""
        return self.inits == self.shutdowns

    # --- lookups -------------------------------------------------------------------------
    def _gpu(self, handle: _Gpu, call: str, key: str | None = None) -> Any:
        """The GPU's record, or with ``key`` that key of it (a recording may leave out what a
        call it makes fail would return, so a missing key is only an error when read)."""
        gpu = self.node["gpus"][handle.index]
        failure = gpu.get("failingCalls", {}).get(call)
        if failure:
            raise _error(failure)
        return gpu if key is None else _read(gpu, key, f"gpus[{handle.index}]", call)

    def _mig(self, handle: _Mig, call: str, key: str) -> Any:
        gpu = self.node["gpus"][handle.gpu]
        index, mig = next((i, m) for i, m in enumerate(gpu["migDevices"]) if m["slot"] == handle.slot)
        failure = mig.get("failingCalls", {}).get(call)
        if failure:
            raise _error(failure)
        return _read(mig, key, f"gpus[{handle.gpu}].migDevices[{index}]", call)

    def _gpu_instance(self, handle: _GpuInstance) -> dict[str, Any]:
        gpu = self.node["gpus"][handle.gpu]
        return next(m for m in gpu["migDevices"] if m["gpuInstanceId"] == handle.instance_id)

    # --- system --------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        if self.node.get("nvmlInit"):
            raise _error(self.node["nvmlInit"])
        self.inits += 1

    def nvmlShutdown(self) -> None:
        if self.shutdowns >= self.inits:
            raise _error("Uninitialized")
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self) -> str:
        return _read(self.node, "driverVersion", "the recording", "nvmlSystemGetDriverVersion")

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return _read(self.node, "cudaDriverVersion", "the recording", "nvmlSystemGetCudaDriverVersion")

    def nvmlDeviceGetCount(self) -> int:
        return len(self.node["gpus"])

    def nvmlDeviceGetHandleByIndex(self, index: int) -> _Gpu:
        if not 0 <= index < len(self.node["gpus"]):
            raise _error("InvalidArgument")
        handle = _Gpu(index)
        self._gpu(handle, "nvmlDeviceGetHandleByIndex")
        return handle

    # --- devices -------------------------------------------------------------------------
    def nvmlDeviceGetUUID(self, handle: _Gpu | _Mig) -> str:
        if isinstance(handle, _Mig):
            return self._mig(handle, "nvmlDeviceGetUUID", "uuid")
        return self._gpu(handle, "nvmlDeviceGetUUID", "uuid")

    def nvmlDeviceGetMinorNumber(self, handle: _Gpu) -> int:
        return self._gpu(handle, "nvmlDeviceGetMinorNumber", "minor")

    def nvmlDeviceGetName(self, handle: _Gpu) -> str:
        return self._gpu(handle, "nvmlDeviceGetName", "name")

    def nvmlDeviceGetBrand(self, handle: _Gpu) -> int:
        return self._gpu(handle, "nvmlDeviceGetBrand", "brand")

    def nvmlDeviceGetArchitecture(self, handle: _Gpu) -> int:
        return self._gpu(handle, "nvmlDeviceGetArchitecture", "architecture")

    def nvmlDeviceGetCudaComputeCapability(self, handle: _Gpu) -> tuple[int, int]:
        major, minor = self._gpu(handle, "nvmlDeviceGetCudaComputeCapability", "cudaComputeCapability")
        return major, minor

    def nvmlDeviceGetMemoryInfo(self, handle: _Gpu) -> SimpleNamespace:
        gpu = self._gpu(handle, "nvmlDeviceGetMemoryInfo")
        if "memoryTotalBytes" not in gpu:
            raise _error("NotSupported")
        total = gpu["memoryTotalBytes"]
        return SimpleNamespace(total=total, free=total, used=0)

    def nvmlDeviceGetPciInfo(self, handle: _Gpu) -> SimpleNamespace:
        # pynvml hands busId back as the raw bytes of the C struct.
        return SimpleNamespace(busId=self._gpu(handle, "nvmlDeviceGetPciInfo", "pciBusId").encode())

    def nvmlDeviceGetMigMode(self, handle: _Gpu) -> list[int]:
        gpu = self._gpu(handle, "nvmlDeviceGetMigMode")
        if "migMode" not in gpu:
            raise _error("NotSupported")
        return list(gpu["migMode"])

    def nvmlDeviceGetAddressingMode(self, handle: _Gpu) -> int:
        gpu = self._gpu(handle, "nvmlDeviceGetAddressingMode")
        if "addressingMode" not in gpu:
            raise _error("NotSupported")
        return int(gpu["addressingMode"])

    def nvmlDeviceGetGpuInstanceProfileInfo(self, handle: _Gpu, profile: int) -> SimpleNamespace:
        gpu = self._gpu(handle, "nvmlDeviceGetGpuInstanceProfileInfo")
        for info in gpu.get("gpuInstanceProfiles", []):
            if info["profile"] == profile:
                return SimpleNamespace(**{k: v for k, v in info.items() if k not in ("profile", "placements")})
        raise _error("NotSupported")

    def nvmlDeviceGetGpuInstancePossiblePlacements(self, handle: _Gpu, profile_id: int, placements: Any,
                                                   count: Any) -> int:
        """pynvml's C-shaped call: fills ``placements`` and sets ``*count``; a profile recorded
        without placements is NotSupported, as NVML answers for one it cannot place."""
        gpu = self._gpu(handle, "nvmlDeviceGetGpuInstancePossiblePlacements")
        info = next((p for p in gpu.get("gpuInstanceProfiles", []) if p["id"] == profile_id), None)
        if info is None or "placements" not in info:
            raise _error("NotSupported" if info is not None else "InvalidArgument")
        recorded = info["placements"]
        room = count._obj  # the c_uint behind ctypes.byref(count)
        if placements is not None:  # None: the call that asks for the count
            if len(recorded) > room.value:
                raise _error("InsufficientSize")
            for i, placement in enumerate(recorded):
                placements[i].start, placements[i].size = placement["start"], placement["size"]
        room.value = len(recorded)
        return pynvml.NVML_SUCCESS

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: _Gpu) -> int:
        return self._gpu(handle, "nvmlDeviceGetMaxMigDeviceCount").get("maxMigDeviceCount", 0)

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: _Gpu, slot: int) -> _Mig:
        gpu = self._gpu(handle, "nvmlDeviceGetMigDeviceHandleByIndex")
        if slot >= gpu.get("maxMigDeviceCount", 0):
            raise _error("InvalidArgument")
        if not any(m["slot"] == slot for m in gpu.get("migDevices", [])):
            raise _error("NotFound")
        return _Mig(handle.index, slot)

    def nvmlDeviceGetGpuInstanceId(self, handle: _Mig) -> int:
        return self._mig(handle, "nvmlDeviceGetGpuInstanceId", "gpuInstanceId")

    def nvmlDeviceGetComputeInstanceId(self, handle: _Mig) -> int:
        return self._mig(handle, "nvmlDeviceGetComputeInstanceId", "computeInstanceId")

    def nvmlDeviceGetGpuInstanceById(self, handle: _Gpu, instance_id: int) -> _GpuInstance:
        gpu = self._gpu(handle, "nvmlDeviceGetGpuInstanceById")
        if not any(m["gpuInstanceId"] == instance_id for m in gpu.get("migDevices", [])):
            raise _error("NotFound")
        return _GpuInstance(handle.index, instance_id)

    def nvmlGpuInstanceGetInfo(self, handle: _GpuInstance) -> SimpleNamespace:
        mig = self._gpu_instance(handle)
        return SimpleNamespace(
            id=handle.instance_id,
            profileId=mig["gpuInstanceProfileId"],
            placement=SimpleNamespace(**mig["placement"]),
        )

    def nvmlGpuInstanceGetComputeInstanceById(
        self, handle: _GpuInstance, instance_id: int
    ) -> _ComputeInstance:
        if self._gpu_instance(handle)["computeInstanceId"] != instance_id:
            raise _error("NotFound")
        return _ComputeInstance(handle.gpu, handle.instance_id, instance_id)

    def nvmlComputeInstanceGetInfo(self, handle: _ComputeInstance) -> SimpleNamespace:
        mig = self._gpu_instance(_GpuInstance(handle.gpu, handle.gpu_instance_id))
        return SimpleNamespace(id=handle.instance_id, profileId=mig["computeInstanceProfileId"])

    def nvmlGpuInstanceGetComputeInstanceProfileInfo(
        self, handle: _GpuInstance, profile: int, engine_profile: int
    ) -> SimpleNamespace:
        gpu = self.node["gpus"][handle.gpu]
        mig = self._gpu_instance(handle)
        gi_slices = next(
            p["sliceCount"] for p in gpu["gpuInstanceProfiles"] if p["id"] == mig["gpuInstanceProfileId"]
        )
        for info in gpu.get("computeInstanceProfiles", []):
            if info["profile"] == profile and info["sliceCount"] <= gi_slices:
                return SimpleNamespace(id=info["id"], sliceCount=info["sliceCount"])
        raise _error("NotSupported")


