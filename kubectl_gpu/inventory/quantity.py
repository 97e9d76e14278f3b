"""Kubernetes' canonical text for an integer quantity created with ``resource.BinarySI``.

The driver builds every capacity with ``resource.NewQuantity(n, resource.BinarySI)``; the
API server (and therefore ``kubectl get resourceslice -o yaml``) shows it canonicalised:
multiples of 1024 get the largest exact binary suffix (85520809984 -> ``81559Mi``), and
values below 1024 fall back to decimal SI (``98``, ``1k``).
"""

from __future__ import annotations

from kubectl_gpu.dra.quantity import format_bytes

_DECIMAL_SUFFIXES = {0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def binary_si(value: int) -> str:
    if -1024 < value < 1024:
        return decimal_si(value)
    return format_bytes(value)  # the largest exact binary suffix, as the core writes byte counts


def decimal_si(value: int) -> str:
    if value == 0:
        return "0"
    amount, exponent = value, 0
    while amount % 10 == 0:
        amount //= 10
        exponent += 1
    while exponent % 3:
        amount *= 10
        exponent -= 1
    return f"{amount}{_DECIMAL_SUFFIXES[exponent]}"
