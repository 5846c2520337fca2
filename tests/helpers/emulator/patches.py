"""The three patch types the official client sends, applied to a stored object.

JSON patch (RFC 6902, ``jsonpatch``) and JSON merge patch (RFC 7386) exactly; strategic
merge patch (the client's choice for a dict body) approximately: as a merge patch, except
that lists of objects keyed by ``name`` (containers, env, volumes, ports...) or ``type``
(conditions) merge item by item, as Kubernetes' patchMergeKey tags make them, and a
``{"$patch": "delete"}`` item removes its match. Server-side apply is a 415.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch

from .errors import StatusError, bad_request

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
MERGE_KEYS = ("name", "type")


def merge(target: Any, patch: Any, *, strategic: bool) -> Any:
    if isinstance(patch, list) and strategic and isinstance(target, list):
        return _merge_list(target, patch)
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge(result.get(key), value, strategic=strategic)
    return result


def _merge_key(items: list) -> str | None:
    for key in MERGE_KEYS:
        if items and all(isinstance(item, dict) and key in item for item in items):
            return key
    return None


def _merge_list(target: list, patch: list) -> list:
    key = _merge_key(target + patch) if all(isinstance(item, dict) for item in patch) else None
    if key is None:
        return copy.deepcopy(patch)
    result = copy.deepcopy(target)
    for item in patch:
        index = next((i for i, old in enumerate(result) if old.get(key) == item.get(key)), None)
        if item.get("$patch") == "delete":
            if index is not None:
                del result[index]
        elif index is None:
            result.append(copy.deepcopy(item))
        else:
            result[index] = merge(result[index], item, strategic=True)
    return result


def applier(content_type: str, body: Any):
    """A function from the current object to the patched one, or the API server's error."""
    content_type = content_type.split(";")[0].strip()
    if content_type == JSON_PATCH:
        if not isinstance(body, list):
            raise bad_request("a JSON patch must be an array of operations", field="patch")

        def apply_json(current: dict) -> dict:
            try:
                return jsonpatch.apply_patch(current, body)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                raise StatusError(
                    422,
                    "Invalid",
                    f"the server rejected our request due to an error in our request: {exc}",
                ) from None

        return apply_json
    if content_type in (MERGE_PATCH, STRATEGIC_MERGE_PATCH):
        if not isinstance(body, dict):
            raise bad_request("a merge patch must be a JSON object", field="patch")
        strategic = content_type == STRATEGIC_MERGE_PATCH
        return lambda current: merge(current, body, strategic=strategic)
    raise StatusError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{JSON_PATCH}, {MERGE_PATCH}, {STRATEGIC_MERGE_PATCH}",
    )
