"""What changes when the claims are for HAMi's DRA driver (kubectl_gpu/dra/hami.py has its facts).

A GPU share becomes the two capacities a hami-gpu device offers and HAMi-core enforces: ``cores``
(percent of one GPU) and ``memory`` (bytes).  The driver's request policy gives a claim that names
neither the whole GPU, so a share names both; a whole GPU names none.  Selectors the core writes in
NVIDIA's attribute domain are moved to HAMi's (the attributes they read have the same names there).
Pure: claims.py builds the objects from what this decides.
"""

from __future__ import annotations

from dataclasses import replace

from kubectl_gpu.dra import facts, hami
from kubectl_gpu.dra.quantity import QuantityError, format_bytes, parse_quantity

from .constants import GPU_DEVICE_CLASS
from .demand import Share
from .model import TargetDriver, TranslateOptions
from .notes import Note, Severity

_NVIDIA_DOMAIN = f"[{facts.literal(facts.NVIDIA_ATTRIBUTE_DOMAIN)}]"
_HAMI_DOMAIN = f"[{facts.literal(hami.HAMI_ATTRIBUTE_DOMAIN)}]"
# What NVIDIA's driver does with the same share, for the report (its consumable shares account
# memory in the scheduler; nothing limits it or compute on the GPU).
ON_NVIDIA = "on NVIDIA's driver the same share would have its memory only accounted by the scheduler and its compute not limited"


def for_target(options: TranslateOptions, target: TargetDriver | None = None) -> TranslateOptions:
    """``options`` for ``target`` (default: their own): HAMi's DeviceClass for HAMi's driver where the
    GPU class is still NVIDIA's default.  AUTO stays AUTO until a cluster profile resolves it
    (cluster/fit.py); until then the claims are NVIDIA's."""
    wanted = options.target_driver if target is None else target
    if wanted is TargetDriver.HAMI and options.gpu_device_class == GPU_DEVICE_CLASS:
        return replace(options, target_driver=wanted, gpu_device_class=hami.HAMI_DEVICE_CLASS)
    return options if wanted is options.target_driver else replace(options, target_driver=wanted)


def is_hami(options: TranslateOptions) -> bool:
    return options.target_driver is TargetDriver.HAMI


def retarget_selector(expression: str) -> str:
    """A selector the core wrote on NVIDIA's attributes (productName, architecture, memory), read
    from HAMi's domain instead, where a hami-gpu publishes the same names."""
    return expression.replace(_NVIDIA_DOMAIN, _HAMI_DOMAIN)


def _round_up_to_step(amount: int) -> int:
    step = hami.MEMORY.step
    return max(hami.MEMORY.minimum, -(-amount // step) * step)


def share_capacity(share: Share, options: TranslateOptions, legacy_text: str,
                   container: str) -> tuple[tuple[tuple[str, str], ...] | None, list[Note]]:
    """The capacity requests for one device of a share: ``cores`` and ``memory``, and notes on what
    each means.  None when the share states no size at all (a time-sliced replica).

    cores: the compute limit the legacy plugin enforced, else hami.NO_CORE_LIMIT (0): HAMi-core limits
    nothing at 0, as the legacy plugins did for a request without a compute figure.
    memory: the stated bytes, else the fraction of --gpu-memory, rounded up to the driver's 1Mi
    step; without either the claim takes all of the GPU's memory (the request policy's default)."""
    fraction, memory, compute = share.fraction, share.memory, share.compute_percent
    if memory is None and fraction is None and compute is None:
        return None, []
    notes: list[Note] = []
    if memory is None and fraction is not None and options.gpu_memory:
        try:
            memory = int(parse_quantity(options.gpu_memory) * fraction)
        except QuantityError:
            memory = None
    requests: list[tuple[str, str]] = [(hami.CORES.name, str(compute if compute is not None else hami.NO_CORE_LIMIT))]
    if memory is not None:
        requests.append((hami.MEMORY.name, format_bytes(_round_up_to_step(memory))))
    else:
        notes.append(Note(Severity.WARNING, f"{legacy_text}: the share's memory is unknown (pass --gpu-memory, e.g. "
                                            "80Gi), so each claim takes all of a GPU's memory on HAMi's driver and "
                                            "no other claim fits beside it", container))
    return tuple(requests), notes


def enforcement_text(capacity: tuple[tuple[str, str], ...]) -> str:
    """What HAMi-core enforces for these capacity requests, in words (hami_core.go GetCDIContainerEdits)."""
    values = dict(capacity)
    memory = values.get(hami.MEMORY.name)
    cores = values.get(hami.CORES.name)
    parts = [f"memory limit {memory}" if memory else "all of the GPU's memory",
             f"compute limit {cores}% of the GPU's SMs" if cores not in (None, str(hami.NO_CORE_LIMIT), "100")
             else "compute not limited"]
    return "HAMi-core enforces " + ", ".join(parts)
