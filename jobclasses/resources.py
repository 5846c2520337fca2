"""The JobClass resource policy (seed 003 ``resources``, rules 1-6).

1. values a Job leaves unset are filled from ``defaults``;
2. the result must lie within ``minimum``/``maximum``;
3. a CPU or memory request may not exceed its limit;
4. the effective resources are written to the Job's status (``jobclasses.job_controller``);
5. later class edits do not change an accepted Job (the status is never recomputed);
6. an adapter never lowers them silently (adapters read the status, not the class).

Plain functions over JSON: ``policy_problems`` is the class controller's InvalidResourcePolicy
check, ``effective_resources`` the Job controller's InvalidResources check.
"""

from __future__ import annotations

from typing import Any

from .quantities import RESOURCES, amount, as_written

KINDS = ("requests", "limits")


def _get(spec: dict | None, kind: str, resource: str) -> Any:
    return (((spec or {}).get(kind) or {}).get(resource)) if isinstance(spec, dict) else None


def policy_problems(policy: dict | None) -> list[str]:
    """Why a class policy can admit no Job or contradicts itself; [] when it is consistent."""
    policy = policy or {}
    defaults, minimum, maximum = (policy.get(k) or {} for k in ("defaults", "minimum", "maximum"))
    problems: list[str] = []
    for kind in KINDS:
        for resource in RESOURCES:
            low, high = _get(minimum, kind, resource), _get(maximum, kind, resource)
            default = _get(defaults, kind, resource)
            path = f"{kind}.{resource}"
            if low is not None and high is not None and amount(low) > amount(high):
                problems.append(f"minimum.{path} {low} is more than maximum.{path} {high}")
            if default is not None and low is not None and amount(default) < amount(low):
                problems.append(f"defaults.{path} {default} is less than minimum.{path} {low}")
            if default is not None and high is not None and amount(default) > amount(high):
                problems.append(f"defaults.{path} {default} is more than maximum.{path} {high}")
    for resource in RESOURCES:
        request, limit = _get(defaults, "requests", resource), _get(defaults, "limits", resource)
        if request is not None and limit is not None and amount(request) > amount(limit):
            problems.append(
                f"defaults.requests.{resource} {request} is more than "
                f"defaults.limits.{resource} {limit}"
            )
        low_request = _get(minimum, "requests", resource)
        high_limit = _get(maximum, "limits", resource)
        if (
            low_request is not None
            and high_limit is not None
            and amount(low_request) > amount(high_limit)
        ):
            problems.append(
                f"minimum.requests.{resource} {low_request} is more than "
                f"maximum.limits.{resource} {high_limit}: no Job could satisfy both"
            )
    return problems


def effective_resources(policy: dict | None, asked: dict | None) -> tuple[dict, list[str]]:
    """(the Job's effective resources, why they break the policy) for a Job asking ``asked``."""
    policy, asked = policy or {}, asked or {}
    defaults = policy.get("defaults") or {}
    effective: dict[str, dict[str, str]] = {}
    origin: dict[tuple[str, str], str] = {}
    for kind in KINDS:
        for resource in RESOURCES:
            value = _get(asked, kind, resource)
            where = "the Job"
            if value is None:
                value, where = _get(defaults, kind, resource), "the class default"
            if value is not None:
                effective.setdefault(kind, {})[resource] = as_written(value)
                origin[(kind, resource)] = where
    problems: list[str] = []
    for kind in KINDS:
        for resource in RESOURCES:
            value = _get(effective, kind, resource)
            if value is None:
                continue
            path, where = f"{kind}.{resource}", origin[(kind, resource)]
            low = _get(policy.get("minimum"), kind, resource)
            high = _get(policy.get("maximum"), kind, resource)
            if low is not None and amount(value) < amount(low):
                problems.append(f"{path} {value} ({where}) is less than the class minimum {low}")
            if high is not None and amount(value) > amount(high):
                problems.append(f"{path} {value} ({where}) is more than the class maximum {high}")
    for resource in RESOURCES:
        request, limit = _get(effective, "requests", resource), _get(effective, "limits", resource)
        if request is not None and limit is not None and amount(request) > amount(limit):
            problems.append(
                f"requests.{resource} {request} ({origin[('requests', resource)]}) is more than "
                f"limits.{resource} {limit} ({origin[('limits', resource)]})"
            )
    return effective, problems
