"""Field ownership: ``metadata.managedFields`` as kube-apiserver keeps it, for every kind.

A *field set* is the set of paths to the fields a manager owns. A path is a tuple of the keys
structured-merge-diff writes in ``fieldsV1``: ``f:<name>`` for a map field, ``k:<json>`` for an
item of a keyed list (``x-kubernetes-list-type: map``), ``v:<json>`` for an item of a set list.
Maps are granular, lists atomic unless ``LIST_MAP_KEYS`` / ``SET_LISTS`` say otherwise (the same
markers the OpenAPI publishes). There is no maintained Python implementation of
structured-merge-diff, so this is a small one covering what the API serves: JSON documents with
those list types.

Ordinary writes (create, PUT, merge/JSON patch) become an ``Update`` entry of their manager
owning the fields they changed (``record_update``); server-side apply is in
``server_side_apply``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from django.utils import timezone

from . import errors
from .conditions import format_time

Path = tuple[str, ...]
FieldSet = frozenset[Path]

# list field name -> the item keys that make it a keyed list (x-kubernetes-list-type: map);
# a list whose items do not all carry unique keys stays atomic
LIST_MAP_KEYS: dict[str, tuple[str, ...]] = {
    "conditions": ("type",),
    "ownerReferences": ("uid",),
    "steps": ("name",),
    "env": ("name",),
    "containers": ("name",),
}
SET_LISTS: dict[Path, str] = {("f:metadata", "f:finalizers"): "set"}
MAX_MANAGER_LENGTH = 128
# an API client that names itself neither by fieldManager nor by User-Agent
DEFAULT_MANAGER = "unknown"
CONSOLE_MANAGER = "kruntimes-console"  # edits in the web console (resource admin)
CLI_MANAGER = "kruntimes-cli"  # manage.py apply and the other write commands
# what no manager owns: the identity and the server's bookkeeping (kube's stripMeta)
_STRIPPED: tuple[Path, ...] = (
    ("f:apiVersion",),
    ("f:kind",),
    *(
        ("f:metadata", f"f:{name}")
        for name in (
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
            "selfLink",
            "generateName",
        )
    ),
)


def key_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _list_keys(path: Path, items: list[Any]) -> tuple[str, ...] | None:
    """The item keys of a keyed list at ``path``, or None when the list is atomic here."""
    name = path[-1][2:] if path and path[-1].startswith("f:") else ""
    keys = LIST_MAP_KEYS.get(name)
    if not keys or not all(isinstance(i, dict) and all(k in i for k in keys) for i in items):
        return None
    seen = {key_json({k: i[k] for k in keys}) for i in items}
    return keys if len(seen) == len(items) else None


def _item_key(keys: tuple[str, ...], item: Mapping[str, Any]) -> str:
    return "k:" + key_json({k: item[k] for k in keys})


def fields_of(value: Any, path: Path = ()) -> set[Path]:
    """Every path ``value`` sets (leaves, and the items of keyed/set lists themselves)."""
    found: set[Path] = set()
    if isinstance(value, dict):
        if not value and path:
            found.add(path)
        for key, child in value.items():
            if child is not None:  # null is no value (a merge patch's removal)
                found |= fields_of(child, (*path, f"f:{key}"))
    elif isinstance(value, list) and path in SET_LISTS:
        found |= {(*path, "v:" + key_json(item)) for item in value}
    elif isinstance(value, list) and (keys := _list_keys(path, value)) is not None:
        for item in value:
            item_path = (*path, _item_key(keys, item))
            found.add(item_path)
            found |= fields_of(item, item_path)
    elif path:
        found.add(path)
    return found


def owned_fields(
    manifest: Mapping[str, Any], subresource: str | None, status_field: str
) -> set[Path]:
    """The paths a write of ``manifest`` sets, less the identity and bookkeeping; a main
    resource write never owns the status, a status write owns only it (kube's reset fields)."""
    document = dict(manifest)
    meta = document.get("metadata")
    if isinstance(meta, dict):  # an empty label map, finalizer list... is shown as none
        document["metadata"] = {k: v for k, v in meta.items() if v not in ({}, [])}
    paths = fields_of(document)
    paths = {p for p in paths if not any(p[: len(s)] == s for s in _STRIPPED)}
    status = f"f:{status_field}" if status_field else None
    if subresource == "status":
        return {p for p in paths if p[0] == status}
    return {p for p in paths if p[0] != status}


def _child(node: Any, step: str) -> tuple[bool, Any]:
    if step.startswith("f:"):
        if isinstance(node, dict) and step[2:] in node:
            return True, node[step[2:]]
        return False, None
    if not isinstance(node, list):
        return False, None
    wanted = json.loads(step[2:])
    for item in node:
        if step.startswith("v:") and item == wanted:
            return True, item
        if (
            step.startswith("k:")
            and isinstance(item, dict)
            and all(item.get(k) == v for k, v in wanted.items())
        ):
            return True, item
    return False, None


def value_at(document: Any, path: Path) -> tuple[bool, Any]:
    """(whether ``path`` is set in ``document``, its value)."""
    node = document
    for step in path:
        found, node = _child(node, step)
        if not found:
            return False, None
    return True, node


def same_at(a: Any, b: Any, path: Path) -> bool:
    """Whether ``path`` holds the same in both (an item of a keyed list: whether present)."""
    found_a, value_a = value_at(a, path)
    found_b, value_b = value_at(b, path)
    if found_a != found_b:
        return False
    return path[-1][:2] in ("k:", "v:") or value_a == value_b


def remove_at(document: Any, path: Path) -> None:
    """Remove the field or list item at ``path`` (in place; nothing when absent)."""
    found, parent = value_at(document, path[:-1])
    if not found:
        return
    step = path[-1]
    if step.startswith("f:") and isinstance(parent, dict):
        parent.pop(step[2:], None)
    elif isinstance(parent, list):
        for index, item in enumerate(parent):
            if _child([item], step)[0]:
                del parent[index]
                return


def merge(live: Any, config: Any, path: Path = ()) -> Any:
    """``config`` applied over ``live``: maps field by field, keyed lists item by item, set
    lists as a union; anything else (an atomic list, a scalar) is replaced."""
    if isinstance(live, dict) and isinstance(config, dict):
        merged = dict(live)
        for key, value in config.items():
            child = (*path, f"f:{key}")
            merged[key] = merge(live[key], value, child) if key in live else value
        return merged
    if isinstance(live, list) and isinstance(config, list):
        if path in SET_LISTS:
            return live + [item for item in config if item not in live]
        keys = _list_keys(path, live)
        config_keys = _list_keys(path, config)
        if keys is not None and config_keys is not None:
            result = list(live)
            for item in config:
                key = _item_key(keys, item)
                for index, existing in enumerate(result):
                    if _item_key(keys, existing) == key:
                        result[index] = merge(existing, item, (*path, key))
                        break
                else:
                    result.append(item)
            return result
    return config


# ---- the wire form -------------------------------------------------------------------------


def encode(paths: Iterable[Path]) -> dict[str, Any]:
    """A field set as ``fieldsV1``: nested keys; ``"."`` marks a set node that has children."""
    tree: dict[str, Any] = {}
    ordered = sorted(paths)
    members = set(ordered)
    for path in ordered:
        node = tree
        for step in path:
            node = node.setdefault(step, {})
    for path in members:
        node = tree
        for step in path:
            node = node[step]
        if node:
            node["."] = {}
    return tree


def decode(tree: Mapping[str, Any], path: Path = ()) -> set[Path]:
    paths: set[Path] = set()
    for step, child in tree.items():
        if step == ".":
            paths.add(path)
        elif isinstance(child, dict) and child:
            paths |= decode(child, (*path, step))
        else:
            paths.add((*path, step))
    return paths


def _valid_entry(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("manager", ""), str)
        and entry.get("operation") in ("Apply", "Update")
        and entry.get("fieldsType") == "FieldsV1"
        and isinstance(entry.get("fieldsV1", {}), dict)
        and isinstance(entry.get("apiVersion", ""), str)
        and isinstance(entry.get("subresource", ""), str)
    )


def given(manifest: Any, live: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The managedFields a write asks for, or None to keep the live ones: like kube-apiserver,
    a write that sends them unchanged, none, or an invalid list keeps what is stored; ``[{}]``
    clears them (the documented reset); a valid changed list replaces them."""
    meta = manifest.get("metadata") if isinstance(manifest, dict) else None
    entries = meta.get("managedFields") if isinstance(meta, dict) else None
    if entries == [{}]:
        return []
    if not entries or entries == live or not isinstance(entries, list):
        return None
    if not all(_valid_entry(e) for e in entries):
        return None
    return [dict(e) for e in entries]


# ---- managers ------------------------------------------------------------------------------


def check_manager(manager: str) -> None:
    """``fieldManager`` as kube validates it (422 on the request's options)."""
    cause = None
    if len(manager) > MAX_MANAGER_LENGTH:
        cause = errors.too_long("fieldManager", MAX_MANAGER_LENGTH)
    elif not manager.isprintable():
        cause = errors.invalid("fieldManager", "must only contain printable characters")
    if cause is not None:
        raise errors.invalid_object("PatchOptions", "meta.k8s.io", "", [cause])


def manager_from_user_agent(user_agent: str) -> str:
    """kube-apiserver's default manager: the User-Agent up to its first ``/`` (128 at most)."""
    return user_agent.split("/", 1)[0][:MAX_MANAGER_LENGTH]


def identity_of(entry: Mapping[str, Any]) -> tuple[str, str, str]:
    return (entry.get("manager", ""), entry.get("operation", ""), entry.get("subresource", ""))


def fieldset(entry: Mapping[str, Any]) -> set[Path]:
    return decode(entry.get("fieldsV1") or {})


def _entry(
    manager: str, operation: str, api_version: str, subresource: str | None, paths: set[Path]
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": format_time(timezone.now()),
        "fieldsType": "FieldsV1",
        "fieldsV1": encode(paths),
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def replace_entry(
    entries: list[dict[str, Any]],
    manager: str,
    operation: str,
    api_version: str,
    subresource: str | None,
    paths: set[Path],
) -> list[dict[str, Any]]:
    """``entries`` with this manager's entry owning ``paths`` (dropped when empty; its time
    kept when it owns the same as before), in place of the old one or last."""
    identity = (manager, operation, subresource or "")
    result, placed = [], False
    for entry in entries:
        if identity_of(entry) != identity:
            result.append(entry)
            continue
        placed = True
        if paths and paths == fieldset(entry) and entry.get("apiVersion") == api_version:
            result.append(entry)
        elif paths:
            result.append(_entry(manager, operation, api_version, subresource, paths))
    if not placed and paths:
        result.append(_entry(manager, operation, api_version, subresource, paths))
    return result


def disown(
    entries: list[dict[str, Any]], paths: set[Path], keep: tuple[str, str, str] | None = None
) -> list[dict[str, Any]]:
    """Every entry but ``keep`` without ``paths`` (an entry left owning nothing goes)."""
    result = []
    for entry in entries:
        owned = fieldset(entry)
        if identity_of(entry) == keep or not owned & paths:
            result.append(entry)
        elif owned - paths:
            result.append({**entry, "fieldsV1": encode(owned - paths)})
    return result


def record_update(
    entries: list[dict[str, Any]],
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    *,
    manager: str,
    api_version: str,
    subresource: str | None,
    status_field: str,
) -> list[dict[str, Any]]:
    """The managed fields after an ordinary write from ``old`` to ``new``: the manager's
    ``Update`` entry gains the fields it changed, the fields it changed or removed leave
    every other manager."""
    new_paths = owned_fields(new, subresource, status_field)
    old_paths = owned_fields(old, subresource, status_field) if old else set()
    changed = {p for p in new_paths if old is None or not same_at(old, new, p)}
    removed = old_paths - new_paths
    if not manager:  # the server's own writer: no manager of its own, only the others lose
        return disown(entries, changed | removed)
    identity = (manager, "Update", subresource or "")
    mine = next((fieldset(e) for e in entries if identity_of(e) == identity), set())
    entries = disown(entries, changed | removed, keep=identity)
    mine = (mine - removed) | changed
    return replace_entry(entries, manager, "Update", api_version, subresource, mine)
