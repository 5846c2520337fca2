"""Human-readable durations: ages as kubectl prints AGE, and elapsed times."""

from __future__ import annotations


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery ``duration.HumanDuration``: 45s, 5m30s, 5m, 3h20m, 30h, 3d4h, 90d,
    2y10d (about two significant figures)."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{int(seconds)}s"
    minutes = int(seconds // 60)
    if minutes < 10:
        rest = int(seconds) % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = int(seconds // 3600)
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    years, rest = divmod(days, 365)
    if years < 8:
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"


def elapsed(seconds: float) -> str:
    """How long something took, measured between a status's times (startTime, completionTime:
    whole seconds, as Kubernetes writes them): ``<1s`` under a second rather than a ``0s``
    that reads as "did not run", else as ``human_duration``. Ages stay ``human_duration``."""
    return "<1s" if seconds < 1 else human_duration(seconds)
