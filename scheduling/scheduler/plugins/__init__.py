"""The default plugin set, in the order the framework runs them."""

from ..framework import Plugin
from .affinity import PreferredRunAffinity, RunAffinity
from .availability import RuntimePodAvailability
from .spread import LeastLoaded


def default_plugins() -> list[Plugin]:
    return [RuntimePodAvailability(), RunAffinity(), PreferredRunAffinity(), LeastLoaded()]


__all__ = [
    "LeastLoaded",
    "PreferredRunAffinity",
    "RunAffinity",
    "RuntimePodAvailability",
    "default_plugins",
]
