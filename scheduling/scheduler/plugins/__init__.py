"""The default plugin set, in the order the framework runs them."""

from ..framework import Plugin
from .affinity import PreferredRunAffinity, RunAffinity
from .availability import RuntimePodAvailability
from .spread import LeastLoaded
from .workspace import WorkspaceFencing


def default_plugins() -> list[Plugin]:
    # fencing first: its Filter is the cheapest and leaves at most one pod for the others
    return [
        WorkspaceFencing(),
        RuntimePodAvailability(),
        RunAffinity(),
        PreferredRunAffinity(),
        LeastLoaded(),
    ]


__all__ = [
    "LeastLoaded",
    "PreferredRunAffinity",
    "RunAffinity",
    "RuntimePodAvailability",
    "WorkspaceFencing",
    "default_plugins",
]
