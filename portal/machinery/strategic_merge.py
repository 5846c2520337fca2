"""Kubernetes strategic merge patch (``application/strategic-merge-patch+json``).

kubectl sends it for the kinds it has compiled-in Go types for (client-side ``kubectl apply``
and ``kubectl diff`` on a Namespace, a ClusterRole...), and the ``kubernetes`` Python client's
default ``patch_*``. It is a JSON merge patch (maps merge recursively, ``null`` deletes) except
that a list whose Go field carries ``patchStrategy:"merge"`` is merged (by its
``patchMergeKey`` for lists of objects, as a set for lists of primitives) instead of replaced,
plus the directives of apimachinery's ``strategicpatch``: ``$patch: replace|delete|merge``,
``$retainKeys``, ``$deleteFromPrimitiveList/<field>`` and ``$setElementOrder/<field>``.

Which fields merge is the Go struct tags' business, so each kind declares its ``Schema`` once
where it is registered (``ResourceKind.strategic_merge``); ObjectMeta's (``OBJECT_META``) is
added for every kind. No PyPI package implements these semantics with a maintained release,
hence this module."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import errors

PATCH = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList/"
SET_ELEMENT_ORDER = "$setElementOrder/"


@dataclass(frozen=True)
class Field:
    """One field's Go struct tags: ``merge`` (``patchStrategy:"merge"``), ``merge_key``
    (``patchMergeKey``, for a list of objects) and the schema of its (element's) fields."""

    merge: bool = False
    merge_key: str | None = None
    fields: Mapping[str, Field] = field(default_factory=dict)


Schema = Mapping[str, Field]

# k8s.io/apimachinery ObjectMeta: ownerReferences merge by uid, finalizers merge as a set;
# managedFields and everything else replace.
OBJECT_META: Schema = {
    "metadata": Field(
        fields={
            "ownerReferences": Field(merge=True, merge_key="uid"),
            "finalizers": Field(merge=True),
        }
    )
}


def with_object_meta(schema: Schema) -> Schema:
    """The kind's own body schema plus ObjectMeta's."""
    return {**OBJECT_META, **schema}


def _bad(path: str, detail: str) -> errors.StatusError:
    return errors.bad_request(
        f"the strategic merge patch does not apply: {path}: {detail}",
        [errors.invalid(path or "patch", detail)],
    )


def apply(original: Any, patch: Any, schema: Schema) -> Any:
    """The patched object (``original`` is not changed)."""
    if not isinstance(patch, dict):
        raise _bad("", "a strategic merge patch must be a JSON object")
    return _merge_map(original if isinstance(original, dict) else {}, patch, schema, "")


def _key_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _merge_map(original: dict[str, Any], patch: dict[str, Any], schema: Schema, path: str) -> Any:
    patch = dict(patch)
    directive = patch.pop(PATCH, None)
    if directive == "replace":
        return _strip(patch)
    if directive == "delete":
        return {}
    if directive not in (None, "merge"):
        raise _bad(_key_path(path, PATCH), f'unknown patch directive "{directive}"')
    result = dict(original)
    retain = patch.pop(RETAIN_KEYS, None)
    if retain is not None:
        if not isinstance(retain, list) or not all(isinstance(k, str) for k in retain):
            raise _bad(_key_path(path, RETAIN_KEYS), "must be a list of field names")
        plain = {k for k in patch if not k.startswith("$")}
        if not plain <= set(retain):
            raise _bad(_key_path(path, RETAIN_KEYS), "must name every field the patch sets")
        result = {k: v for k, v in result.items() if k in retain}
    orders: dict[str, list[Any]] = {}
    for key in [k for k in patch if k.startswith(("$deleteFromPrimitiveList/", "$setElement"))]:
        value = patch.pop(key)
        if not isinstance(value, list):
            raise _bad(_key_path(path, key), "must be a list")
        if key.startswith(SET_ELEMENT_ORDER):
            orders[key[len(SET_ELEMENT_ORDER) :]] = value
            continue
        name = key[len(DELETE_FROM_PRIMITIVE_LIST) :]
        current = result.get(name)
        if isinstance(current, list):
            result[name] = [item for item in current if item not in value]
    for key, value in patch.items():
        if key.startswith("$"):
            raise _bad(_key_path(path, key), "unknown patch directive")
        sub = schema.get(key, Field())
        here = _key_path(path, key)
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            base = result.get(key)
            merged = _merge_map(base if isinstance(base, dict) else {}, value, sub.fields, here)
            if value.get(PATCH) == "delete":
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            base = result.get(key)
            result[key] = _merge_list(base if isinstance(base, list) else [], value, sub, here)
        else:
            result[key] = value
    for name, order in orders.items():
        if isinstance(result.get(name), list):
            result[name] = _in_order(result[name], order, schema.get(name, Field()))
    return result


def _merge_list(original: list[Any], patch: list[Any], spec: Field, path: str) -> list[Any]:
    """A list field: replaced, unless its Go field says ``patchStrategy:"merge"``."""
    if any(isinstance(item, dict) and item.get(PATCH) == "replace" for item in patch):
        return [_strip(i) for i in patch if not (isinstance(i, dict) and PATCH in i)]
    if not spec.merge:
        return [_strip(item) for item in patch]
    if spec.merge_key is None:  # a set of primitives: the union, original order first
        result = list(original)
        for item in patch:
            if isinstance(item, dict | list):
                raise _bad(path, "a merging list of primitives may not hold objects or lists")
            if item not in result:
                result.append(item)
        return result
    key = spec.merge_key
    result = [dict(item) if isinstance(item, dict) else item for item in original]
    for index, item in enumerate(patch):
        here = f"{path}[{index}]"
        if not isinstance(item, dict) or key not in item:
            raise _bad(here, f'each element must be an object with the merge key "{key}"')
        found = next(
            (i for i, o in enumerate(result) if isinstance(o, dict) and o.get(key) == item[key]),
            None,
        )
        if item.get(PATCH) == "delete":
            result = [o for o in result if not (isinstance(o, dict) and o.get(key) == item[key])]
        elif found is None:
            result.append(_merge_map({}, item, spec.fields, here))
        else:
            result[found] = _merge_map(result[found], item, spec.fields, here)
    return result


def _in_order(items: list[Any], order: list[Any], spec: Field) -> list[Any]:
    """``$setElementOrder``: the named elements in the order given, the others after them."""
    if spec.merge_key is None:
        keys = list(order)

        def ident(item: Any) -> Any:
            return item
    else:
        merge_key = spec.merge_key
        keys = [o.get(merge_key) if isinstance(o, dict) else o for o in order]

        def ident(item: Any) -> Any:
            return item.get(merge_key) if isinstance(item, dict) else item

    ranked = [item for k in keys for item in items if ident(item) == k]
    return ranked + [item for item in items if ident(item) not in keys]


def _strip(value: Any) -> Any:
    """A value taken whole from the patch, without directives (never stored)."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value
