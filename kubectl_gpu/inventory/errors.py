"""Why there is no inventory at all, with the exit code `kubectl gpu inventory` uses for it."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    USAGE = 2  # click's own code for bad options
    NO_NVML_LIBRARY = 3  # libnvidia-ml.so.1 (the NVIDIA driver's user-space library) is missing
    NO_GPU = 4  # NVML works but sees no usable GPU: driver not loaded, no permission, zero GPUs
    NVML_FAILED = 5  # any other NVML failure before devices could be listed
    PARTIAL = 6  # some devices could not be read; the others were printed


class InventoryUnavailable(Exception):
    """The node's GPUs cannot be listed at all.  ``str(error)`` is one line for a person."""

    def __init__(self, message: str, exit_code: ExitCode) -> None:
        super().__init__(message)
        self.exit_code = exit_code
