"""Execution adapters by controllerName: the local, Kubernetes and OpenSandbox adapters."""

from __future__ import annotations

from .base import (
    Adapter,
    BackendError,
    ExecutionRequest,
    NotReadyToStart,
    Observation,
    Readiness,
)

LOCAL = "execution.ayatori.ddupan.top/local"
KUBERNETES = "execution.ayatori.ddupan.top/kubernetes"
OPENSANDBOX = "execution.ayatori.ddupan.top/opensandbox"

_adapters: dict[str, Adapter] = {}


def register(adapter: Adapter) -> Adapter:
    _adapters[adapter.controller_name] = adapter
    return adapter


def unregister(controller_name: str) -> None:
    _adapters.pop(controller_name, None)


def get(controller_name: str) -> Adapter | None:
    """The adapter owning ``controller_name``; None for a controller this portal lacks."""
    if not _adapters:
        _register_builtin()
    return _adapters.get(controller_name)


def supported() -> list[str]:
    if not _adapters:
        _register_builtin()
    return sorted(_adapters)


def _register_builtin() -> None:
    from .kubernetes import KubernetesAdapter
    from .local import LocalAdapter
    from .opensandbox import OpenSandboxAdapter

    register(LocalAdapter())
    register(KubernetesAdapter())
    register(OpenSandboxAdapter())


__all__ = [
    "KUBERNETES",
    "LOCAL",
    "OPENSANDBOX",
    "Adapter",
    "BackendError",
    "ExecutionRequest",
    "NotReadyToStart",
    "Observation",
    "Readiness",
    "get",
    "register",
    "supported",
    "unregister",
]
