"""The parameter kinds by name: the models a JobClass's parametersRef may point at."""

from __future__ import annotations

from typing import Any

from .models import (
    GROUP,
    KubernetesExecutionParameters,
    LocalExecutionParameters,
    OpenSandboxExecutionParameters,
)

PARAMETER_MODELS: dict[str, type[Any]] = {
    "KubernetesExecutionParameters": KubernetesExecutionParameters,
    "OpenSandboxExecutionParameters": OpenSandboxExecutionParameters,
    "LocalExecutionParameters": LocalExecutionParameters,
}


def lookup(ref: dict | None) -> Any | None:
    """The parameters object ``ref`` ({group, kind, name}) names, or None."""
    ref = ref or {}
    model = PARAMETER_MODELS.get(ref.get("kind", "")) if ref.get("group") == GROUP else None
    if model is None:
        return None
    return model.objects.filter(name=ref.get("name", "")).first()
