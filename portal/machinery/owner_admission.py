"""Who may say an object belongs to a controller (Kubernetes' OwnerReferencesPermissionEnforcement).

A controller trusts its children by their ownerReference and the labels it gives them, so these
must not be anyone's to set:

- changing ``metadata.ownerReferences`` (on create: having any) needs ``delete`` on the object;
- a new reference with ``controller: true`` or ``blockOwnerDeletion: true`` needs ``update`` on
  the owner's ``finalizers`` subresource (as in Kubernetes, a grant only the owner's controller
  and cluster admins hold);
- setting, changing or removing a controller's identifying label (registered by the app owning
  it with ``register_controller_label``) needs the same ``update <owner plural>/finalizers``.

The store runs ``check`` for every kind on every create and update, after validation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from portal.auth.authorizer import review

from . import errors
from .write_context import WriteContext

OWNER_REFERENCES = "metadata.ownerReferences"
LABELS = "metadata.labels"
FINALIZERS = "finalizers"


@dataclass(frozen=True)
class ControllerLabel:
    """A label only the controller of ``owner_kind`` objects may set on what they own."""

    key: str
    owner_api_version: str
    owner_kind: str


_labels: dict[str, ControllerLabel] = {}


def register_controller_label(key: str, owner_api_version: str, owner_kind: str) -> None:
    """Declare ``key`` a label that identifies a child of an ``owner_kind`` controller."""
    _labels[key] = ControllerLabel(key, owner_api_version, owner_kind)


def controller_labels() -> frozenset[str]:
    """The registered keys (what a copy of an object must leave out, e.g. a retried Run)."""
    return frozenset(_labels)


def _meta(manifest: dict[str, Any] | None) -> dict[str, Any]:
    meta = (manifest or {}).get("metadata")
    return meta if isinstance(meta, dict) else {}


def _refs(meta: dict[str, Any]) -> list[dict[str, Any]]:
    refs = meta.get("ownerReferences") or []
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


def _refuse(kind: Any, name: str, field: str, message: str) -> errors.StatusError:
    subject = f"{kind.plural}.{kind.group}" if kind.group else kind.plural
    return errors.StatusError(
        403,
        "Forbidden",
        f'{subject} "{name}" is forbidden: {message}',
        kind=kind.plural,
        group=kind.group,
        name=name,
        causes=[errors.forbidden(field, message)],
    )


def _owner_kind(api_version: Any, kind_name: Any) -> Any:
    from .registry import registry

    if not isinstance(api_version, str) or not isinstance(kind_name, str):
        return None
    return registry.for_manifest(api_version, kind_name)


def _may_finalize(context: WriteContext, owner: Any, namespace: str, name: str) -> bool:
    where = namespace if owner.namespaced else ""
    decision = review(
        context.user_info, "update", owner.group, owner.plural, FINALIZERS, where, name,
        owner.version,
    )  # fmt: skip
    return decision.allowed


def _check_references(
    kind: Any, new_meta: dict[str, Any], old_meta: dict[str, Any], context: WriteContext
) -> None:
    new_refs, old_refs = _refs(new_meta), _refs(old_meta)
    if new_refs == old_refs:
        return
    name, namespace = new_meta.get("name") or "", new_meta.get("namespace") or ""
    user = context.user_info
    deletes = review(
        user, "delete", kind.group, kind.plural, "", namespace if kind.namespaced else "", name,
        kind.version,
    )  # fmt: skip
    if not deletes.allowed:
        raise _refuse(
            kind,
            name,
            OWNER_REFERENCES,
            f'User "{user.username}" cannot set an ownerRef on a resource it cannot delete',
        )
    for ref in new_refs:
        if ref in old_refs or not (ref.get("controller") is True or ref.get("blockOwnerDeletion")):
            continue
        owner = _owner_kind(ref.get("apiVersion"), ref.get("kind"))
        if owner is None or not _may_finalize(context, owner, namespace, str(ref.get("name"))):
            raise _refuse(
                kind,
                name,
                OWNER_REFERENCES,
                f'User "{user.username}" cannot set a controller or blockOwnerDeletion '
                f"ownerReference to {ref.get('kind')} {ref.get('name')!r}: it cannot update "
                "that owner's finalizers",
            )


def _check_labels(
    kind: Any, new_meta: dict[str, Any], old_meta: dict[str, Any], context: WriteContext
) -> None:
    new_labels = new_meta.get("labels") or {}
    old_labels = old_meta.get("labels") or {}
    name, namespace = new_meta.get("name") or "", new_meta.get("namespace") or ""
    for key in sorted(_labels):
        if new_labels.get(key) == old_labels.get(key):
            continue
        label = _labels[key]
        owner = _owner_kind(label.owner_api_version, label.owner_kind)
        refs = [
            r
            for r in _refs(new_meta)
            if (r.get("apiVersion"), r.get("kind")) == (label.owner_api_version, label.owner_kind)
        ]
        owner_name = str(refs[0].get("name") or "") if len(refs) == 1 else ""
        if owner is None or not _may_finalize(context, owner, namespace, owner_name):
            raise _refuse(
                kind,
                name,
                LABELS,
                f'User "{context.user_info.username}" cannot set the label {key}: it identifies '
                f"the children of a {label.owner_kind} controller",
            )


def check(
    kind: Any, new: dict[str, Any], old: dict[str, Any] | None, context: WriteContext
) -> None:
    """Refuse (403, the field named) a write that claims ownership it may not claim."""
    new_meta, old_meta = _meta(new), _meta(old)
    _check_references(kind, new_meta, old_meta, context)
    _check_labels(kind, new_meta, old_meta, context)
