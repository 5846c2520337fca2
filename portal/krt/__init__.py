"""krt: the portal's own CLI and Python SDK for a user's laptop, speaking to the
Kubernetes-style API through a kubeconfig only. Importing it loads neither Django nor the
``kubernetes`` client; the SDK's names load on first use (``from portal.krt import Client``)."""

from __future__ import annotations

from typing import Any

SDK_NAMES = ("Client", "Function")
ERROR_NAMES = (
    "KrtError",
    "ApiError",
    "NotReady",
    "InvokeError",
    "TooManyRequests",
    "FunctionFailed",
)
__all__ = [*SDK_NAMES, *ERROR_NAMES]


def __getattr__(name: str) -> Any:
    if name in SDK_NAMES:
        from . import sdk

        return getattr(sdk, name)
    if name in ERROR_NAMES:
        from . import errors

        return getattr(errors, name)
    raise AttributeError(name)
