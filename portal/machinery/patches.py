"""The patch types a PATCH may send, and how each applies to the current object.

JSON merge patch (RFC 7386) and JSON patch (RFC 6902, through the ``jsonpatch`` library,
``test`` ops included) are served for every kind. A strategic merge patch is applied to the
built-in kinds, which declare their Go struct tags (``ResourceKind.strategic_merge``,
``strategic_merge``); for custom resources it is refused with kube-apiserver's own 415 (no
custom resource has those tags). Server-side apply (``APPLY_PATCH``) is served by
``server_side_apply``."""

from __future__ import annotations

from typing import Any

import jsonpatch

from . import errors, strategic_merge
from .manifest import merge_patch
from .strategic_merge import Schema, with_object_meta

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
SERVED = (JSON_PATCH, MERGE_PATCH)


def refuse_unserved(content_type: str, *, strategic: bool = False) -> None:
    """415 for the patch types this server does not apply, saying what to send instead;
    ``strategic`` when the kind declares strategic merge strategies (a built-in kind)."""
    if content_type == STRATEGIC_MERGE_PATCH and not strategic:
        raise errors.StatusError(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types "
            f"include: {', '.join(SERVED)} (kubectl patch --type=merge or --type=json)",
        )


def check_shape(patch_type: str, body: Any) -> None:
    """400 for a body that is not a patch of its type at all (before any object is read)."""
    if patch_type == JSON_PATCH:
        if not isinstance(body, list) or not all(isinstance(op, dict) for op in body):
            raise errors.bad_request(
                "a JSON patch must be an array of operation objects",
                [errors.invalid("patch", "must be an array of operation objects")],
            )
    elif not isinstance(body, dict):
        raise errors.bad_request(
            "a merge patch must be a JSON object",
            [errors.invalid("patch", "must be a JSON object")],
        )


def _json_patch(document: dict[str, Any], operations: list[dict[str, Any]]) -> Any:
    """Each op in turn, so a failure names the op at fault: a 422, as kube-apiserver answers a
    JSON patch that does not apply (a failed ``test``, a missing path)."""
    result: Any = document
    for index, operation in enumerate(operations):
        try:
            result = jsonpatch.apply_patch(result, [operation], in_place=False)
        except Exception as exc:  # noqa: BLE001 - every failure of the patch is the client's
            detail = str(exc) or type(exc).__name__
            raise errors.StatusError(
                422,
                "Invalid",
                f"the server rejected our request due to an error in our request: "
                f"patch operation {index} ({operation.get('op')!s} {operation.get('path')!s}) "
                f"does not apply: {detail}",
                causes=[errors.invalid(f"patch[{index}]", detail)],
            ) from None
    return result


def apply_patch(
    patch_type: str, current: dict[str, Any], body: Any, strategic: Schema | None = None
) -> Any:
    """The patched manifest (the body's shape was checked by ``check_shape``); ``strategic``
    is the kind's schema, for a strategic merge patch."""
    if patch_type == JSON_PATCH:
        return _json_patch(current, body)
    if patch_type == STRATEGIC_MERGE_PATCH and strategic is not None:
        return strategic_merge.apply(current, body, with_object_meta(strategic))
    return merge_patch(current, body)
