"""Admission of a Run's workspace reference on create (seed 002, permission boundary rules 1-3).

``admit(run, namespace, user)`` is the one check; the Run kind's admission hook
(``check_run_workspace``, every writer: REST, admin, CLI, controllers, dry runs too) and the
validating webhook (``workspaces.webhook``) both call it. It refuses, as a ``StatusError``:

1. a workspace that does not exist in the Run's namespace: 422 Invalid, cause
   ``spec.workspace.name`` (FieldValueNotFound), instead of a Run left Pending;
2. a workspace of another Runtime: 422 Invalid on ``spec.workspace.name`` and ``spec.runtime``;
3. a writer not allowed ``use`` on ``persistentworkspaces/use`` (group kruntimes.io) for that
   namespace and name, asked through ``portal.auth.authorizer.review`` within a budget of
   ``USE_REVIEW_SECONDS``: 403 Forbidden naming the user and the workspace, cause
   ``spec.workspace.name``. A review that times out or fails is a denial (the authorizer fails
   closed). The workflow controller's proven child Runs skip this review
   (``workspaces.ownership.trusted_child``); nobody else does.

Updates are not checked here: ``spec.workspace`` is immutable once the Run exists.
"""

from __future__ import annotations

import logging
from typing import Any

from portal.auth.authorizer import Decision, UserInfo, budget, review
from portal.machinery import errors
from portal.machinery.admission import WriteContext
from portal.machinery.registry import ResourceKind

from .kinds import GROUP, VERSION
from .ownership import trusted_child

log = logging.getLogger(__name__)

USE_REVIEW_SECONDS = 2.0
PLURAL = "persistentworkspaces"
NAME_FIELD = "spec.workspace.name"
WORKSPACE_KIND = "PersistentWorkspace"
API_GROUP = f"{GROUP}/{VERSION}"  # a RunWorkspaceReference's apiGroup is group/version


def check_run_workspace(
    kind: ResourceKind, new: dict[str, Any], old: dict[str, Any] | None, context: WriteContext
) -> None:
    """The Run kind's admission hook: ``admit`` on create when spec.workspace is set."""
    if old is not None or not (new.get("spec") or {}).get("workspace"):
        return
    meta = new.get("metadata") or {}
    admit(new, meta.get("namespace") or "default", context.user_info)


def _invalid(run: dict[str, Any], causes: list[errors.FieldError]) -> errors.StatusError:
    name = (run.get("metadata") or {}).get("name") or ""
    return errors.invalid_object("Run", GROUP, name if isinstance(name, str) else "", causes)


def workspace_name(run: dict[str, Any]) -> str:
    """spec.workspace.name, or 422 when the reference is not one (the webhook's input is not
    validated by the portal's serializers)."""
    ref = (run.get("spec") or {}).get("workspace")
    name = ref.get("name") if isinstance(ref, dict) else None
    if not isinstance(name, str) or not name:
        raise _invalid(run, [errors.required(NAME_FIELD)])
    causes = []
    kind, api_group = ref.get("kind") or WORKSPACE_KIND, ref.get("apiGroup") or API_GROUP
    if kind != WORKSPACE_KIND:
        causes.append(errors.not_supported("spec.workspace.kind", kind, [WORKSPACE_KIND]))
    if api_group != API_GROUP:
        causes.append(errors.not_supported("spec.workspace.apiGroup", api_group, [API_GROUP]))
    if causes:
        raise _invalid(run, causes)
    return name


def use_decision(user: UserInfo, namespace: str, name: str) -> Decision:
    """May ``user`` use the workspace? Bounded by ``USE_REVIEW_SECONDS``; any failure denies."""
    try:
        with budget(USE_REVIEW_SECONDS):
            return review(user, "use", GROUP, PLURAL, "use", namespace, name, VERSION)
    except Exception as exc:  # noqa: BLE001 - an authorizer that fails denies (fail closed)
        log.warning("use review of %s for %s failed; denying", name, user.username, exc_info=True)
        return Decision(False, f"authorization check failed: {type(exc).__name__}")


def forbidden(user: UserInfo, namespace: str, name: str, reason: str) -> errors.StatusError:
    because = f": {reason}" if reason else ""
    message = (
        f'{PLURAL}.{GROUP} "{name}" is forbidden: User "{user.username}" cannot use resource '
        f'"{PLURAL}/use" in API group "{GROUP}" in the namespace "{namespace}"{because}'
    )
    error = errors.forbidden_status(message, PLURAL, GROUP, name)
    error.causes = [errors.forbidden(NAME_FIELD, message)]
    return error


def admit(run: dict[str, Any], namespace: str, user: UserInfo) -> None:
    """Refuse (raise a StatusError) a Run that may not reference its workspace."""
    from .models import PersistentWorkspace

    name = workspace_name(run)
    workspace = PersistentWorkspace.objects.filter(namespace=namespace, name=name).first()
    if workspace is None:
        raise _invalid(
            run, [errors.field_not_found(NAME_FIELD, f'{PLURAL}.{GROUP} "{name}" not found')]
        )
    runtime = (run.get("spec") or {}).get("runtime")
    if runtime != workspace.runtime:
        why = f'PersistentWorkspace "{name}" belongs to Runtime "{workspace.runtime}"'
        raise _invalid(
            run,
            [
                errors.invalid(NAME_FIELD, f'{why}, not the Run\'s Runtime "{runtime}"'),
                errors.invalid("spec.runtime", f'Invalid value: "{runtime}": {why}'),
            ],
        )
    if trusted_child(user, run.get("metadata") or {}, workspace):
        return
    decision = use_decision(user, namespace, name)
    if not decision.allowed:
        raise forbidden(user, namespace, name, decision.reason)
