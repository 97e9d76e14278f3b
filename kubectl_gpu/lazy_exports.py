"""Packages whose public names load their modules on first use (PEP 562 module `__getattr__`).

`kubectl_gpu.core`, `kubectl_gpu.k8s` and `kubectl_gpu.cluster` each export names from several
modules, but most commands need few of them: offline `explain` reads the fact tables, not the
translation; `migrate FILE` never needs aiohttp and the kubernetes package.  A package states
where each name lives and gets its `__getattr__` from here.
"""

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(package: str, namespace: dict[str, Any],
                 homes: Mapping[str, tuple[str, str]]) -> Callable[[str], Any]:
    """The module `__getattr__` for `package`: `homes` maps each public name to (module, name in
    it); a name is imported on first use and then kept in `namespace` (the package's globals)."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{home[0]}"), home[1])
        namespace[name] = value
        return value

    return __getattr__


def homes_of(modules: Mapping[str, tuple[str, ...]]) -> dict[str, tuple[str, str]]:
    """`homes` for the common case: each module's names keep their own name in the package."""
    return {name: (module, name) for module, names in modules.items() for name in names}
