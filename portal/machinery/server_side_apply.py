"""Server-side apply (``application/apply-patch+yaml``): a manager's applied configuration
merged into the live object, as the Kubernetes docs describe it.

The fields the manager applies are set; those it applied before and applies no more are removed
unless another manager owns them; a field another manager owns with a different value is a
409 conflict naming the managers and paths, unless ``force`` moves it to the applier."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import errors
from . import managed_fields as mf
from .errors import FieldError
from .patches import APPLY_PATCH

CONFLICT_CAUSE = "FieldManagerConflict"


@dataclass(frozen=True)
class Applied:
    """The object after an apply, and the managed fields it is to be stored with."""

    manifest: dict[str, Any]
    managed: list[dict[str, Any]]


def check_options(patch_type: str, manager: str | None, force: str | None) -> None:
    """PatchOptions as kube-apiserver validates them (a 422 on ``PatchOptions``)."""
    causes: list[FieldError] = []
    if patch_type == APPLY_PATCH and not manager:
        causes.append(
            errors.required("fieldManager", "Required value: is required for apply patch")
        )
    if patch_type != APPLY_PATCH and force is not None:
        causes.append(
            errors.forbidden("force", "Forbidden: may not be specified for non-apply patch")
        )
    if causes:
        raise errors.invalid_object("PatchOptions", "meta.k8s.io", "", causes)
    if manager:
        mf.check_manager(manager)


def path_text(path: mf.Path) -> str:
    """A path as kube names it in a conflict: ``.spec.x``, ``.status.conditions[type="Ready"]``."""
    text = ""
    for step in path:
        if step.startswith("f:"):
            text += "." + step[2:]
        elif step.startswith("k:"):
            keys = json.loads(step[2:])
            text += "[" + ",".join(f"{k}={mf.key_json(v)}" for k, v in keys.items()) + "]"
        else:
            text += f"[={step[2:]}]"
    return text


def manager_text(entry: Mapping[str, Any]) -> str:
    """A manager as kube-apiserver names it in a conflict (its ``printManager``)."""
    text = json.dumps(entry.get("manager", ""))
    if entry.get("subresource"):
        text += f" with subresource {json.dumps(entry['subresource'])}"
    return f"{text} using {entry.get('apiVersion', '')}"


def _conflict(
    kind_plural: str, group: str, name: str, found: dict[str, list[mf.Path]]
) -> errors.StatusError:
    count = sum(len(paths) for paths in found.values())
    noun = "conflict" if count == 1 else "conflicts"
    parts = []
    for label, paths in found.items():
        texts = [path_text(p) for p in sorted(paths)]
        if count == 1:
            parts.append(f"conflict with {label}: {texts[0]}")
        else:  # kube lists every manager's paths once there is more than one conflict
            parts.append(f"conflicts with {label}:\n" + "\n".join(f"- {t}" for t in texts))
    causes = [
        FieldError(path_text(p), CONFLICT_CAUSE, f"conflict with {label}")
        for label, paths in found.items()
        for p in sorted(paths)
    ]
    return errors.StatusError(
        409,
        "Conflict",
        f"Apply failed with {count} {noun}: " + "\n".join(parts),
        kind=kind_plural,
        group=group,
        name=name,
        causes=causes,
    )


def _is_key_field(path: mf.Path) -> bool:
    """Whether ``path`` is a key field of the keyed-list item it is in (``name`` of
    ``k:{"name":...}``)."""
    if len(path) < 2 or not path[-2].startswith("k:") or not path[-1].startswith("f:"):
        return False
    return path[-1][2:] in json.loads(path[-2][2:])


def apply(
    live: Mapping[str, Any] | None,
    config: Mapping[str, Any],
    entries: list[dict[str, Any]],
    *,
    manager: str,
    force: bool,
    api_version: str,
    subresource: str | None,
    status_field: str,
    plural: str,
    group: str,
    name: str,
) -> Applied:
    """Apply ``config`` as ``manager`` to ``live`` (None: the object is created)."""
    identity = (manager, "Apply", subresource or "")
    applied = mf.owned_fields(config, subresource, status_field)
    config_body = {
        k: v
        for k, v in config.items()
        if (k == status_field) == (subresource == "status") or k == "metadata"
    }
    if live is None:
        merged = copy.deepcopy(dict(config_body))
        return Applied(
            merged, mf.replace_entry([], manager, "Apply", api_version, subresource, applied)
        )
    found: dict[str, list[mf.Path]] = {}
    stolen: set[mf.Path] = set()
    for entry in entries:
        if mf.identity_of(entry) == identity:
            continue
        for path in mf.fieldset(entry) & applied:
            if not mf.same_at(config, live, path):
                label = manager_text(entry)
                found.setdefault(label, []).append(path)
                stolen.add(path)
    if found and not force:
        raise _conflict(plural, group, name, found)
    entries = mf.disown(entries, stolen, keep=identity)
    previous = next((mf.fieldset(e) for e in entries if mf.identity_of(e) == identity), set())
    others = set().union(*(mf.fieldset(e) for e in entries if mf.identity_of(e) != identity))
    merged = mf.merge(copy.deepcopy(dict(live)), copy.deepcopy(config_body))
    # shallowest first: a keyed item goes while its key fields still name it; a node that
    # holds a field some other manager (or this apply) owns stays
    kept = others | applied
    held = {owned[:depth] for owned in kept for depth in range(1, len(owned))}
    for path in sorted(previous - kept - held, key=len):
        if (path[:-1] in held or path[:-1] in kept) and _is_key_field(path):
            continue  # an item that stays keeps the fields that name it
        mf.remove_at(merged, path)
    entries = mf.replace_entry(entries, manager, "Apply", api_version, subresource, applied)
    return Applied(merged, entries)
