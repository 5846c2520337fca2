"""The one write path for every kind: authorize, default (on create), validate, admit (and
record the kind's warnings), then persist with Kubernetes semantics.

API views, the admin, ``manage.py apply`` and controllers all come through here with a
``WriteContext`` naming who writes (``admission``), so authorization, validation, admission
checks, generation, resourceVersion (compare-and-set), finalizers and owner references behave
the same wherever a write starts.
"""

from __future__ import annotations

import copy
import secrets
import string
import time
from collections.abc import Mapping
from functools import partial
from typing import Any

from django.db import IntegrityError, models, transaction
from django.utils import timezone

from . import (
    admission_warnings,
    errors,
    gc_queue,
    history,
    managed_fields,
    owner_admission,
    patches,
    rules,
    server_side_apply,
)
from .admission import WriteContext, authorize
from .collectors import GARBAGE_COLLECTOR
from .errors import FieldError
from .manifest import check_type_meta, to_manifest, validate_metadata
from .registry import ResourceKind
from .serializers import ObjectMetaSerializer, flatten_errors

WRITABLE_META = ("labels", "annotations", "finalizers", "ownerReferences")
META_ATTRS = {
    "labels": "labels",
    "annotations": "annotations",
    "finalizers": "finalizers",
    "ownerReferences": "owner_references",
}
FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"

__all__ = [
    "WriteContext",
    "apply",
    "blocking_finalizers",
    "create",
    "delete",
    "get_object",
    "patch",
    "remove_finalizer",
    "replace",
]


def _refuse_read_only(kind: ResourceKind) -> None:
    if kind.read_only:
        raise errors.read_only(kind.plural, kind.group)


def _objects(kind: ResourceKind) -> models.QuerySet[Any]:
    query: models.QuerySet[Any] = kind.model.objects.all()
    return query


def get_object(kind: ResourceKind, namespace: str | None, name: str) -> Any:
    query = _objects(kind).filter(name=name)
    if kind.namespaced:
        query = query.filter(namespace=namespace)
    obj = query.first()
    if obj is None:
        raise errors.not_found(kind.plural, kind.group, name)
    return history.remember_labels(obj)


def blocking_finalizers(kind: ResourceKind, obj: Any) -> list[str]:
    """Finalizers that keep a deleted object's row: metadata ones, and those the kind adds
    (a Namespace's ``spec.finalizers``)."""
    extra = kind.extra_finalizers(obj) if kind.extra_finalizers else []
    return list(obj.finalizers or []) + list(extra)


def _generate_name(prefix: str) -> str:
    alphabet = string.ascii_lowercase + string.digits
    return (
        prefix + "".join(secrets.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
        if prefix
        else "".join(secrets.choice(alphabet) for _ in range(8))
    )


def _meta_shape_causes(meta: Any) -> list[FieldError]:
    if meta is None:
        return []
    if not isinstance(meta, dict):
        return [FieldError("metadata", errors.TYPE_INVALID, "must be an object")]
    serializer = ObjectMetaSerializer(data=meta)
    return [] if serializer.is_valid() else flatten_errors(serializer.errors, "metadata")


def _meta_of(manifest: Mapping[str, Any]) -> dict[str, Any]:
    meta = manifest.get("metadata")
    return dict(meta) if isinstance(meta, dict) else {}


def _validate_body(
    kind: ResourceKind,
    manifest: Mapping[str, Any],
    old: Mapping[str, Any] | None,
    subresource: str | None,
) -> tuple[dict[str, Any], list[FieldError]]:
    """Validated body fields: the main resource never writes status, /status writes only it.

    A field that fails keeps its best-effort value (``rules.validate_field``), so the kind's
    rules still compare it; the causes say the write is refused."""
    known = {"apiVersion", "kind", "metadata", *kind.body}
    causes = [
        errors.forbidden(key, f'unknown field "{key}"') for key in sorted(set(manifest) - known)
    ]
    body: dict[str, Any] = {}
    for wire, serializer_class in kind.body.items():
        is_status = wire == kind.status_field
        if (is_status and subresource != "status") or (subresource == "status" and not is_status):
            body[wire] = old.get(wire) if old else ({} if is_status else None)
            continue
        body[wire], field_causes = rules.validate_field(serializer_class, manifest.get(wire), wire)
        causes += field_causes
    if kind.normalize is not None:
        normalize = kind.normalize
        body = rules.run_if_seen(causes, lambda: normalize(body, old), body)
    return body, causes


def _raise_invalid(kind: ResourceKind, name: str, causes: list[FieldError]) -> None:
    if causes:  # a cause reported twice (by two rules) is named once, where it came first
        raise errors.invalid_object(kind.kind, kind.group, name, list(dict.fromkeys(causes)))


def _run_defaulting(
    kind: ResourceKind, manifest: Any, namespace: str | None, name: str, context: WriteContext
) -> Any:
    """A copy of the manifest with the kind's defaulting hooks applied, in order (create only:
    what a mutating webhook does); the first hook returning causes makes the create a 422."""
    if not kind.defaulting:
        return manifest
    defaulted = copy.deepcopy(manifest)
    for hook in kind.defaulting:
        _raise_invalid(kind, name, hook(kind, defaulted, namespace, context))
    return defaulted


def _admit(
    kind: ResourceKind, new: dict[str, Any], old: dict[str, Any] | None, context: WriteContext
) -> None:
    """The admission checks that need a valid object and the writer (after every cause)."""
    owner_admission.check(kind, new, old, context)
    for check in kind.admission:
        check(kind, new, old, context)


def _require_namespace(namespace: str) -> None:
    from .registry import registry

    ns_kind = registry.get("", "v1", "namespaces")
    if ns_kind is None:  # a registry without Namespaces (some tests): nothing to require
        return
    ns = ns_kind.model.objects.filter(name=namespace).only("deletion_timestamp").first()
    if ns is None:
        raise errors.not_found("namespaces", "", namespace)
    if ns.deletion_timestamp is not None:
        raise errors.forbidden_status(
            f"unable to create new content in namespace {namespace} because it is being terminated",
            "namespaces",
            "",
            namespace,
        )


def _apply_fields(
    kind: ResourceKind, obj: Any, meta: Mapping[str, Any], body: Mapping[str, Any]
) -> None:
    for wire, attr in META_ATTRS.items():
        default: list[Any] | dict[str, Any] = (
            [] if wire in ("finalizers", "ownerReferences") else {}
        )
        setattr(obj, attr, meta.get(wire) or default)
    for wire, value in body.items():
        setattr(obj, kind.attr(wire), value)
    sync = getattr(obj, "sync_columns", None)
    if sync is not None:
        sync()


def _notify(kind: ResourceKind, obj: Any, event: str) -> None:
    from .models import OwnerLink

    history.record(kind, obj, event)
    if event == "DELETED":
        OwnerLink.forget(obj.uid)
    else:
        OwnerLink.record(kind, obj, created=event == "ADDED")
    deleting_first = (
        event != "DELETED"
        and FOREGROUND in (obj.finalizers or [])
        and obj.deletion_timestamp is not None
    )
    owners = []
    if (event == "DELETED" or deleting_first) and OwnerLink.has_dependents(obj.uid):
        owners.append(obj.uid)  # its dependents are collected
    if event == "DELETED":  # a foreground owner may go once its last dependent is gone
        owners += [ref["uid"] for ref in obj.owner_references or [] if ref.get("uid")]
    if owners:
        gc_queue.request_owners(owners)


def _managed_after(
    kind: ResourceKind,
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    sent: Any,
    live: list[dict[str, Any]],
    subresource: str | None,
    context: WriteContext,
) -> list[dict[str, Any]]:
    """The managedFields an ordinary write leaves: those it sent (when valid and changed) or
    the live ones, with the writer's ``Update`` entry for what it changed (an API client's:
    the server's own writers, with no ``field_manager``, keep no entry)."""
    entries = managed_fields.given(sent, live)
    if entries == []:  # the documented reset, [{}]
        return []
    if entries is None and not live and not context.field_manager:
        return []  # nobody manages this object's fields (a controller's Event, say)
    return managed_fields.record_update(
        live if entries is None else entries,
        old,
        new,
        manager=context.field_manager,
        api_version=kind.api_version,
        subresource=subresource,
        status_field=kind.status_field or "",
    )


def create(
    kind: ResourceKind,
    manifest: Any,
    *,
    namespace: str | None = None,
    context: WriteContext,
    managed: list[dict[str, Any]] | None = None,
) -> Any:
    """Create (``managed``: the managedFields a server-side apply computed; otherwise the
    writer's ``Update`` entry owns what it set)."""
    _refuse_read_only(kind)
    meta = _meta_of(manifest) if isinstance(manifest, dict) else {}
    body_ns = meta.get("namespace") if kind.namespaced else None
    if kind.namespaced:
        namespace = namespace or (body_ns if isinstance(body_ns, str) else None) or "default"
    context = authorize(context, kind, "create", namespace if kind.namespaced else None)
    check_type_meta(kind, manifest)
    if body_ns and body_ns != namespace:  # (None for a cluster-scoped kind)
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
            [errors.invalid("metadata.namespace", "does not match the request")],
        )
    if not meta.get("name") and isinstance(meta.get("generateName"), str) and meta["generateName"]:
        meta["name"] = _generate_name(meta["generateName"])
    defaults = (
        *kind.default_finalizers,
        *(kind.finalizers_for(manifest) if kind.finalizers_for else ()),
    )
    if defaults and isinstance(meta.get("finalizers") or [], list):
        have = list(meta.get("finalizers") or [])
        meta["finalizers"] = have + [f for f in defaults if f not in have]
    name = meta.get("name") or ""
    manifest = _run_defaulting(kind, manifest, namespace, name, context)
    defaulted_meta = manifest.get("metadata") if kind.defaulting else None
    if isinstance(defaulted_meta, dict) and "labels" in defaulted_meta:
        meta["labels"] = defaulted_meta["labels"]  # a defaulting hook may label the object
    body, causes = _validate_body(kind, manifest, None, None)
    causes = _meta_shape_causes(manifest.get("metadata")) + validate_metadata(kind, meta) + causes
    new_manifest = {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {**meta, "namespace": namespace} if kind.namespaced else meta,
        **body,
    }
    causes += rules.causes(causes, [partial(v, new_manifest, None) for v in kind.validators])
    _raise_invalid(kind, name, causes)
    _admit(kind, new_manifest, None, context)
    admission_warnings.admit(kind, new_manifest, None)
    if kind.namespaced:
        assert namespace is not None  # defaulted above
        _require_namespace(namespace)
    obj = kind.model(name=name)
    if kind.namespaced:
        obj.namespace = namespace
    _apply_fields(kind, obj, meta, body)
    obj.managed_fields = (
        managed
        if managed is not None
        else _managed_after(kind, None, new_manifest, manifest, [], None, context)
    )
    if context.dry_run:
        return obj
    try:
        with transaction.atomic():
            obj.resource_version = history.allocate()
            obj.save(force_insert=True)
            _notify(kind, obj, "ADDED")
    except IntegrityError:
        raise errors.already_exists(kind.plural, kind.group, name) from None
    return obj


def _check_resource_version(kind: ResourceKind, obj: Any, meta: Mapping[str, Any]) -> None:
    wanted = meta.get("resourceVersion")
    if wanted not in (None, "") and str(wanted) != str(obj.resource_version):
        raise errors.conflict(
            kind.plural,
            kind.group,
            obj.name,
            "the object has been modified; please apply your changes to the "
            "latest version and try again",
        )


def _save_if_unchanged(kind: ResourceKind, obj: Any, seen_version: int) -> None:
    """Compare-and-set: write only if nobody wrote since we read (409 otherwise)."""
    sync = getattr(obj, "sync_columns", None)
    if sync is not None:
        sync()
    fields = {
        f.attname: getattr(obj, f.attname)
        for f in kind.model._meta.concrete_fields
        if not f.primary_key
    }
    version = history.allocate()
    fields["resource_version"] = version
    updated = _objects(kind).filter(pk=obj.pk, resource_version=seen_version).update(**fields)
    if not updated:
        raise errors.conflict(
            kind.plural,
            kind.group,
            obj.name,
            "the object has been modified; please apply your changes to the "
            "latest version and try again",
        )
    obj.resource_version = version


def _finish_deletion_if_released(kind: ResourceKind, obj: Any) -> bool:
    if obj.deletion_timestamp is not None and not blocking_finalizers(kind, obj):
        _objects(kind).filter(pk=obj.pk).delete()
        obj.resource_version = history.allocate()
        _notify(kind, obj, "DELETED")
        return True
    return False


def replace(
    kind: ResourceKind,
    namespace: str | None,
    name: str,
    manifest: Any,
    *,
    subresource: str | None = None,
    context: WriteContext,
) -> Any:
    """PUT semantics: the manifest is the whole new object (or the whole status)."""
    _refuse_read_only(kind)
    context = authorize(context, kind, "update", namespace, name, subresource or "")
    return _replace(kind, namespace, name, manifest, subresource, context)


def _replace(
    kind: ResourceKind,
    namespace: str | None,
    name: str,
    manifest: Any,
    subresource: str | None,
    context: WriteContext,
    managed: list[dict[str, Any]] | None = None,
) -> Any:
    check_type_meta(kind, manifest)
    if manifest.get("metadata") is None:  # e.g. a merge patch {"metadata": null}
        raise errors.invalid_object(
            kind.kind,
            kind.group,
            name,
            [errors.required("metadata", "Required value: an update keeps the object's metadata")],
        )
    meta = _meta_of(manifest)
    if meta.get("name") not in (None, "", name):
        raise errors.bad_request(
            "the name of the object does not match the name on the URL",
            [errors.invalid("metadata.name", "does not match the name on the URL")],
        )
    if kind.namespaced and meta.get("namespace") not in (None, "", namespace):
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
            [errors.invalid("metadata.namespace", "does not match the request")],
        )
    with transaction.atomic():
        obj = get_object(kind, namespace, name)
        _check_resource_version(kind, obj, meta)
        old = to_manifest(kind, obj)
        if subresource == "status":
            meta = old["metadata"]
        body, causes = _validate_body(kind, manifest, old, subresource)
        causes = (
            _meta_shape_causes(manifest.get("metadata"))
            + validate_metadata(kind, {**meta, "name": name})
            + causes
        )
        new = {
            **old,
            "metadata": {**old["metadata"], **{k: meta.get(k) for k in WRITABLE_META}},
            **body,
        }
        causes += rules.causes(causes, _update_rules(kind, obj, meta, new, old, subresource))
        _raise_invalid(kind, name, causes)
        _admit(kind, new, old, context)
        if subresource != "status":
            admission_warnings.admit(kind, new, old)
        if any(body.get(f) != old.get(f) for f in kind.generation_fields):
            obj.generation += 1
        live_managed = list(obj.managed_fields or [])
        _apply_fields(kind, obj, meta, body)
        obj.managed_fields = (
            managed
            if managed is not None
            else _managed_after(kind, old, new, manifest, live_managed, subresource, context)
        )
        if _unmanaged(to_manifest(kind, obj)) == _unmanaged(old) and _untimed(
            obj.managed_fields
        ) == _untimed(live_managed):
            # nothing changed (a re-apply, a PUT of what is there): no write, no new
            # resourceVersion, no watch event, as kube-apiserver skips a no-op update
            obj.managed_fields = live_managed
            return obj
        if context.dry_run:
            return obj
        _save_if_unchanged(kind, obj, int(old["metadata"]["resourceVersion"]))
        if not _finish_deletion_if_released(kind, obj):
            _notify(kind, obj, "MODIFIED")
    return obj


def _unmanaged(manifest: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in manifest.get("metadata", {}).items() if k != "managedFields"}
    return {**manifest, "metadata": meta}


def _untimed(managed: Any) -> list[Any]:
    """managedFields without their times: an entry whose fields did not change is the same
    entry (kube-apiserver drops a timestamp-only change too)."""
    if not isinstance(managed, list):
        return [managed]
    return [
        {k: v for k, v in entry.items() if k != "time"} if isinstance(entry, dict) else entry
        for entry in managed
    ]


def _update_rules(
    kind: ResourceKind,
    obj: Any,
    meta: Mapping[str, Any],
    new: dict[str, Any],
    old: dict[str, Any],
    subresource: str | None,
) -> list[rules.Rule]:
    """An update's (old, new) rules, in the order their causes are listed: the status
    strategy's (on /status), the metadata's, then the kind's validators."""
    found: list[rules.Rule] = []
    if subresource == "status" and kind.status is not None:
        strategy, field = kind.status, kind.status.field
        found.append(lambda: strategy.validate_update(new.get(field), old.get(field)))
    found.append(partial(_no_new_finalizers_when_terminating, obj, meta))
    return found + [partial(validator, new, old) for validator in kind.validators]


def _no_new_finalizers_when_terminating(obj: Any, meta: Mapping[str, Any]) -> list[FieldError]:
    if obj.deletion_timestamp is None:
        return []
    added = set(meta.get("finalizers") or []) - set(obj.finalizers or [])
    if not added:
        return []
    return [
        errors.forbidden(
            "metadata.finalizers",
            "no new finalizers can be added if the object is being deleted, "
            f"found new finalizers {sorted(added)}",
        )
    ]


# An unconditional patch or delete re-applies after a concurrent write, as kube-apiserver's
# GuaranteedUpdate does: a Run's status is written several times a second while it starts, and
# five tries in a row lost to it in CI. A conflict waits a little longer each time.
WRITE_ATTEMPTS = 20
WRITE_BACKOFF_SECONDS = 0.005


def _try_again(exc: errors.StatusError, attempt: int, held: bool) -> None:
    """After a write's ``attempt`` failed with ``exc``: wait to try again when it lost a race
    (409) and the client did not hold it to a version or uid (``held``); otherwise, or after
    WRITE_ATTEMPTS, ``exc`` stands."""
    if held or exc.reason != "Conflict" or attempt == WRITE_ATTEMPTS:
        raise exc
    time.sleep(WRITE_BACKOFF_SECONDS * attempt)


def patch(
    kind: ResourceKind,
    namespace: str | None,
    name: str,
    patch_body: Any,
    *,
    subresource: str | None = None,
    patch_type: str = patches.MERGE_PATCH,
    context: WriteContext,
) -> Any:
    """A merge patch (RFC 7386), JSON patch (RFC 6902) or strategic merge patch (a kind with
    ``strategic_merge``) applied to the current object, then a PUT of the result.

    Without a resourceVersion precondition a patch applies to whatever is current, so a
    concurrent write only makes it apply again (as the Kubernetes API server does); with one
    (a merge patch naming metadata.resourceVersion, a JSON patch changing it), a stale version
    is a 409."""
    _refuse_read_only(kind)
    context = authorize(context, kind, "patch", namespace, name, subresource or "")
    patches.refuse_unserved(patch_type, strategic=kind.strategic_merge is not None)
    patches.check_shape(patch_type, patch_body)
    given_meta = patch_body.get("metadata") if isinstance(patch_body, dict) else None
    names_version = isinstance(given_meta, dict) and "resourceVersion" in given_meta
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        current = get_object(kind, namespace, name)
        seen = str(current.resource_version)
        merged = patches.apply_patch(
            patch_type, to_manifest(kind, current), patch_body, kind.strategic_merge
        )
        meta = merged.get("metadata") if isinstance(merged, dict) else None
        conditional = names_version or (
            isinstance(meta, dict) and meta.get("resourceVersion") != seen
        )
        if not conditional and isinstance(meta, dict):
            # (a patch that removed metadata or made it a non-object is refused by replace)
            merged["metadata"] = {**meta, "resourceVersion": seen}
        try:
            return _replace(kind, namespace, name, merged, subresource, context)
        except errors.StatusError as exc:
            _try_again(exc, attempt, held=conditional)
    raise AssertionError("unreachable")


def apply(
    kind: ResourceKind,
    namespace: str | None,
    name: str,
    config: Any,
    *,
    subresource: str | None = None,
    force: bool = False,
    context: WriteContext,
) -> tuple[Any, bool]:
    """Server-side apply of ``config`` by ``context.field_manager``: (object, created). An
    absent object is created (authorized as a create); a present one is merged as
    ``server_side_apply`` says, then written as an update (retried after a concurrent write
    unless the configuration names a resourceVersion)."""
    _refuse_read_only(kind)
    context = authorize(context, kind, "patch", namespace, name, subresource or "")
    check_type_meta(kind, config)
    meta = _meta_of(config)
    _check_apply_config(kind, namespace, name, config, meta)
    names_version = meta.get("resourceVersion") not in (None, "")
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        try:
            current = get_object(kind, namespace, name)
        except errors.StatusError as exc:
            if exc.code != 404 or subresource:
                raise
            current = None
        live = to_manifest(kind, current) if current is not None else None
        result = server_side_apply.apply(
            live,
            config,
            list(current.managed_fields or []) if current is not None else [],
            manager=context.field_manager,
            force=force,
            api_version=kind.api_version,
            subresource=subresource,
            status_field=kind.status_field or "",
            plural=kind.plural,
            group=kind.group,
            name=name,
        )
        merged = result.manifest
        merged_meta = {**_meta_of(merged), "name": name}
        if kind.namespaced:
            merged_meta["namespace"] = namespace
        try:
            if current is None:
                merged = {**merged, "apiVersion": kind.api_version, "kind": kind.kind}
                merged["metadata"] = merged_meta
                obj = create(
                    kind, merged, namespace=namespace, context=context, managed=result.managed
                )
                return obj, True
            if not names_version:
                merged_meta["resourceVersion"] = str(current.resource_version)
            merged["metadata"] = merged_meta
            obj = _replace(kind, namespace, name, merged, subresource, context, result.managed)
            return obj, False
        except errors.StatusError as exc:
            if exc.reason == "AlreadyExists":  # created meanwhile: apply to it
                exc = errors.conflict(kind.plural, kind.group, name, exc.message)
            _try_again(exc, attempt, held=names_version)
    raise AssertionError("unreachable")


def _check_apply_config(
    kind: ResourceKind, namespace: str | None, name: str, config: Any, meta: Mapping[str, Any]
) -> None:
    """What kube-apiserver requires of an applied configuration: its type meta, a name that
    is the URL's, no managedFields."""
    causes = [
        errors.required(key, "Required value: must be set for an apply patch")
        for key in ("apiVersion", "kind")
        if not config.get(key)
    ]
    if meta.get("name") not in (None, "", name):
        causes.append(errors.invalid("metadata.name", "does not match the name on the URL"))
    if kind.namespaced and meta.get("namespace") not in (None, "", namespace):
        causes.append(errors.invalid("metadata.namespace", "does not match the request"))
    if meta.get("managedFields") is not None:
        causes.append(errors.forbidden("metadata.managedFields", "must be nil"))
    if causes:
        raise errors.bad_request("; ".join(f"{c.field}: {c.message}" for c in causes), causes)


def delete(
    kind: ResourceKind,
    namespace: str | None,
    name: str,
    *,
    propagation: str = "Background",
    preconditions: Mapping[str, Any] | None = None,
    context: WriteContext,
) -> tuple[Any, bool]:
    """Kubernetes deletion. Returns (object, gone): gone is False while finalizers remain."""
    _refuse_read_only(kind)
    context = authorize(context, kind, "delete", namespace, name)
    if propagation not in ("Background", "Foreground", "Orphan"):
        raise errors.bad_request(
            f'unsupported propagationPolicy "{propagation}"',
            [
                errors.not_supported(
                    "propagationPolicy", propagation, ["Background", "Foreground", "Orphan"]
                )
            ],
        )
    if name in kind.protected_names:
        raise errors.forbidden_status(
            f'{kind.plural} "{name}" is forbidden: this object may not be deleted',
            kind.plural,
            kind.group,
            name,
        )
    preconditions = preconditions or {}
    # as with a patch: without preconditions to hold to, a write that lands between the read
    # and this delete's own makes it read again (the API server's retry on conflict)
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        try:
            return _delete_once(kind, namespace, name, propagation, preconditions, context)
        except errors.StatusError as exc:
            _try_again(exc, attempt, held=bool(preconditions))
    raise AssertionError("unreachable")


def orphan_dependents(owner_uid: Any) -> None:
    """propagationPolicy=Orphan: strip the owner's references from its dependents."""
    from .models import OwnerLink
    from .registry import registry

    for link in list(OwnerLink.objects.filter(owner_uid=owner_uid)):
        kind = registry.lookup(link.dependent_kind)
        if kind is None:
            continue
        try:
            dependent = get_object(kind, link.dependent_namespace, link.dependent_name)
        except Exception:  # already gone
            link.delete()
            continue
        refs = [r for r in dependent.owner_references if r.get("uid") != str(owner_uid)]
        patch(
            kind,
            link.dependent_namespace or None,
            link.dependent_name,
            {"metadata": {"ownerReferences": refs or None}},
            context=GARBAGE_COLLECTOR,
        )


def _delete_once(
    kind: ResourceKind,
    namespace: str | None,
    name: str,
    propagation: str,
    preconditions: Mapping[str, Any],
    context: WriteContext,
) -> tuple[Any, bool]:
    from .models import OwnerLink

    with transaction.atomic():
        obj = get_object(kind, namespace, name)
        _check_delete_preconditions(kind, obj, preconditions)
        seen, seen_finalizers = obj.resource_version, list(obj.finalizers)
        if propagation == "Orphan" and not context.dry_run:
            orphan_dependents(obj.uid)
        elif (
            propagation == "Foreground"
            and OwnerLink.has_dependents(obj.uid)
            and FOREGROUND not in obj.finalizers
        ):
            obj.finalizers = [*obj.finalizers, FOREGROUND]
        if blocking_finalizers(kind, obj):
            if obj.deletion_timestamp is not None and seen_finalizers == obj.finalizers:
                return obj, False  # already terminating: a repeated delete changes nothing
            if obj.deletion_timestamp is None:
                obj.deletion_timestamp = timezone.now()
            if context.dry_run:  # the object as the delete would leave it, not stored
                return obj, False
            _save_if_unchanged(kind, obj, seen)
            _notify(kind, obj, "MODIFIED")
            return obj, False
        if context.dry_run:
            return obj, True
        _objects(kind).filter(pk=obj.pk).delete()
        obj.resource_version = history.allocate()
        _notify(kind, obj, "DELETED")
    return obj, True


def _check_delete_preconditions(
    kind: ResourceKind, obj: Any, preconditions: Mapping[str, Any]
) -> None:
    """DeleteOptions.preconditions, with the API server's words (``rest.BeforeDelete``)."""
    uid, version = preconditions.get("uid"), preconditions.get("resourceVersion")
    if uid and uid != str(obj.uid):
        raise errors.conflict(
            kind.plural,
            kind.group,
            obj.name,
            f"the UID in the precondition ({uid}) does not match the UID in record ({obj.uid}). "
            "The object might have been deleted and then recreated",
        )
    if version and str(version) != str(obj.resource_version):
        raise errors.conflict(
            kind.plural,
            kind.group,
            obj.name,
            f"the ResourceVersion in the precondition ({version}) does not match the "
            f"ResourceVersion in record ({obj.resource_version}). "
            "The object might have been modified",
        )


def remove_finalizer(kind: ResourceKind, obj: Any, finalizer: str, *, context: WriteContext) -> Any:
    """For controllers: drop one finalizer (deleting the row when it was the last)."""
    if finalizer not in (obj.finalizers or []):
        return obj
    return patch(
        kind,
        getattr(obj, "namespace", None),
        obj.name,
        {
            "metadata": {
                "finalizers": [f for f in obj.finalizers if f != finalizer],
                "resourceVersion": str(obj.resource_version),
            }
        },
        context=context,
    )
