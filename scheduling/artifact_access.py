"""Admission of a Run's artifact inputs on create: a ref stays in the Run's namespace.

An ArtifactRef carries coordinates, never authorization: whoever may create a Run could
otherwise stage another tenant's artifact knowing its Run UID and name. ``admit`` (the Run
kind's admission hook ``check_artifact_inputs``, every writer, and the validating webhook)
refuses, as a ``StatusError``:

1. a ref whose location does not say which namespace it points into
   (``runtimed.protocol.ref_namespace``): 422 Invalid, cause ``spec.artifactInputs[i].location``;
2. a ref into another namespace, unless the writer may ``get`` ``runs/artifacts`` (group
   kruntimes.io) there, asked through ``portal.auth.authorizer.review`` within
   ``ARTIFACTS_REVIEW_SECONDS`` (as the workspace ``use`` review is; a review that fails
   denies): 403 Forbidden, cause ``spec.artifactInputs[i].location``.

Updates are not checked: ``spec.artifactInputs`` is immutable once the Run exists.
"""

from __future__ import annotations

import logging
from typing import Any

from portal.auth.authorizer import Decision, UserInfo, budget, review
from portal.machinery import errors
from portal.machinery.registry import ResourceKind, registry
from portal.machinery.write_context import WriteContext
from runtimed.protocol import ref_namespace

from .models import Run

log = logging.getLogger(__name__)

ARTIFACTS_REVIEW_SECONDS = 2.0
PLURAL, SUBRESOURCE = "runs", "artifacts"


def check_artifact_inputs(
    kind: ResourceKind, new: dict[str, Any], old: dict[str, Any] | None, context: WriteContext
) -> None:
    """The Run kind's admission hook: ``admit`` on create."""
    if old is None:
        meta = new.get("metadata") or {}
        admit(new, meta.get("namespace") or "default", context.user_info)


def location_field(index: int) -> str:
    return f"spec.artifactInputs[{index}].location"


def _run_kind() -> ResourceKind:
    kind = registry.for_model(Run)
    assert kind is not None, "the Run kind is registered when the app is ready"
    return kind


def artifacts_decision(user: UserInfo, namespace: str) -> Decision:
    """May ``user`` read Run artifacts in ``namespace``? Bounded; any failure denies."""
    runs = _run_kind()
    try:
        with budget(ARTIFACTS_REVIEW_SECONDS):
            return review(user, "get", runs.group, PLURAL, SUBRESOURCE, namespace, "", runs.version)
    except Exception as exc:  # noqa: BLE001 - an authorizer that fails denies (fail closed)
        log.warning("artifacts review in %s for %s failed; denying", namespace, user.username)
        return Decision(False, f"authorization check failed: {type(exc).__name__}")


def forbidden(user: UserInfo, namespace: str, index: int, reason: str) -> errors.StatusError:
    group = _run_kind().group
    because = f": {reason}" if reason else ""
    message = (
        f'User "{user.username}" cannot get resource "{PLURAL}/{SUBRESOURCE}" in API group '
        f'"{group}" in the namespace "{namespace}"{because}'
    )
    error = errors.forbidden_status(f"{PLURAL}.{group} is forbidden: {message}", PLURAL, group)
    error.causes = [errors.forbidden(location_field(index), message)]
    return error


def target_namespaces(run: dict[str, Any]) -> list[tuple[int, str]]:
    """(index, namespace) of each artifact input; 422 when a ref's namespace is unknown."""
    inputs = (run.get("spec") or {}).get("artifactInputs") or []
    targets, causes = [], []
    for index, item in enumerate(inputs if isinstance(inputs, list) else []):
        target = ref_namespace(item.get("ref") if isinstance(item, dict) else None)
        if target is None:
            causes.append(
                errors.invalid(
                    location_field(index),
                    "Invalid value: the location must name namespaces/<namespace>/runs/"
                    "<run-uid>/<name> in its driver's store",
                )
            )
        else:
            targets.append((index, target))
    if causes:
        name = (run.get("metadata") or {}).get("name")
        group = _run_kind().group
        raise errors.invalid_object("Run", group, name if isinstance(name, str) else "", causes)
    return targets


def admit(run: dict[str, Any], namespace: str, user: UserInfo) -> None:
    """Refuse (raise a StatusError) a Run whose artifact inputs it may not read."""
    decided: dict[str, Decision] = {}
    for index, target in target_namespaces(run):
        if target == namespace:
            continue
        if target not in decided:
            decided[target] = artifacts_decision(user, target)
        if not decided[target].allowed:
            raise forbidden(user, target, index, decided[target].reason)
