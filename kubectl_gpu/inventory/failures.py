"""Why there is no inventory at all, with the exit code `kubectl gpu inventory` uses for it."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    # Numbered to fit the one exit-code table of every kubectl gpu command (kubectl_gpu/cli/exits.py):
    # 3 is "some input could not be processed, the rest was", as for migrate; 6-8 are inventory's own.
    OK = 0
    USAGE = 2  # click's own code for bad options
    PARTIAL = 3  # some devices could not be read; the others were printed
    NO_NVML_LIBRARY = 6  # libnvidia-ml.so.1 (the NVIDIA driver's user-space library) is missing
    NO_GPU = 7  # NVML works but sees no usable GPU: driver not loaded, no permission, zero GPUs
    NVML_FAILED = 8  # any other NVML failure before devices could be listed


class InventoryUnavailable(Exception):
    """The node's GPUs cannot be listed at all.  ``str(error)`` is one line for a person."""

    def __init__(self, message: str, exit_code: ExitCode) -> None:
        super().__init__(message)
        self.exit_code = exit_code
