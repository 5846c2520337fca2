"""``apply``: create an object, or merge a manifest into the live one."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from portal.auth.authorizer import UserInfo
from portal.auth.identities import LOCAL_OPERATOR
from portal.machinery import store
from portal.machinery.errors import StatusError
from portal.machinery.manifest import to_manifest
from portal.machinery.registry import ResourceKind

from .errors import CLIError
from .resolve import cli_context, kind_for_manifest, metadata_of, target_namespace
from .sources import Document


def apply_patch(kind: ResourceKind, manifest: dict) -> dict:
    """The merge patch ``apply`` sends: labels/annotations and the body fields, never status."""
    meta = metadata_of(manifest)
    patch = {
        key: value
        for key, value in manifest.items()
        if key not in ("apiVersion", "kind", "metadata", kind.status_field)
    }
    patch_meta = {key: meta[key] for key in ("labels", "annotations") if key in meta}
    if patch_meta:
        patch["metadata"] = patch_meta
    return patch


def apply_document(
    document: Document,
    namespace: str | None = None,
    dry_run: bool = False,
    user: UserInfo = LOCAL_OPERATOR,
) -> str:
    """Create or merge one manifest; returns kubectl's line (``<plural>.<group>/<name> ...``).

    ``unchanged`` when merging would not change the live object: nothing is written then, so
    resourceVersion stays put. Raises CLIError carrying the lines to print.
    """
    manifest = document.manifest
    kind = kind_for_manifest(manifest)
    meta = metadata_of(manifest)
    name = meta.get("name")
    if not name and meta.get("generateName"):
        raise CLIError.client(f"from {document.source}: cannot use generate name with apply")
    ns = target_namespace(kind, manifest, namespace)
    context = cli_context(user, dry_run)
    live = _live_object(kind, ns, name)
    if live is None:
        return _create(kind, document, ns, context)
    return _merge(kind, document, ns, name, live, context, dry_run)


def _live_object(kind: ResourceKind, ns: str | None, name: Any) -> Any:
    """The object the manifest names, or None when it has no name or does not exist."""
    if not (isinstance(name, str) and name):
        return None
    try:
        return store.get_object(kind, ns, name)
    except StatusError as exc:
        if exc.code != 404:
            raise CLIError.from_status(exc) from exc
    return None


def _create(
    kind: ResourceKind, document: Document, ns: str | None, context: store.WriteContext
) -> str:
    manifest = document.manifest
    meta = metadata_of(manifest)
    if not kind.namespaced and "namespace" in meta:
        manifest = {**manifest, "metadata": {k: v for k, v in meta.items() if k != "namespace"}}
    try:
        obj = store.create(kind, manifest, namespace=ns, context=context)
    except StatusError as exc:
        raise CLIError.from_status(exc, "creating", document.source) from exc
    return f"{kind.key}/{obj.name} created"


def _merge(
    kind: ResourceKind,
    document: Document,
    ns: str | None,
    name: str,
    live: Any,
    context: store.WriteContext,
    dry_run: bool,
) -> str:
    before = to_manifest(kind, live)
    patch = apply_patch(kind, document.manifest)
    try:
        # A dry run shows what the merge would make; compare before writing anything.
        preview = store.patch(kind, ns, name, patch, context=replace(context, dry_run=True))
        if to_manifest(kind, preview) == before:
            return f"{kind.key}/{name} unchanged"
        if not dry_run:
            # Precondition: write only onto the version the comparison was made against.
            guarded = {
                **patch,
                "metadata": {
                    **patch.get("metadata", {}),
                    "resourceVersion": before["metadata"]["resourceVersion"],
                },
            }
            store.patch(kind, ns, name, guarded, context=context)
    except StatusError as exc:
        raise CLIError.from_status(exc, "patching", document.source) from exc
    return f"{kind.key}/{name} configured"


def dry_run_suffix(mode: str) -> str:
    return {"client": " (dry run)", "server": " (server dry run)"}.get(mode, "")
