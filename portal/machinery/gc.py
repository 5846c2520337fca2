"""Garbage collection: the background half of Kubernetes deletion.

Level-triggered and batched: each call does a bounded amount of work and says where to
resume, so a beat pass never runs one unbounded query and a lost message only delays.
- dependents whose owners are all gone are deleted (honouring their finalizers);
- an owner deleted in the foreground keeps ``foregroundDeletion`` until its dependents are gone;
- a terminating Namespace's content is deleted, then its ``kubernetes`` finalizer released.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from django.db import transaction

from . import errors, store
from .admission import WriteContext
from .collectors import GARBAGE_COLLECTOR, NAMESPACE_CONTROLLER
from .registry import ResourceKind, registry

log = logging.getLogger(__name__)


@dataclass
class Progress:
    deleted: int = 0
    released: int = 0
    more: bool = False


def _existing_uids(uids: set[str]) -> set[str]:
    found: set[str] = set()
    for kind in registry.stored():
        found |= {
            str(u) for u in kind.model.objects.filter(uid__in=uids).values_list("uid", flat=True)
        }
    return found


def _delete_quietly(
    kind: ResourceKind,
    namespace: str,
    name: str,
    progress: Progress,
    context: WriteContext = GARBAGE_COLLECTOR,
) -> None:
    try:
        _, gone = store.delete(kind, namespace or None, name, context=context)
        progress.deleted += gone
    except errors.StatusError as exc:
        if exc.code != 404:  # someone else got there first otherwise
            log.warning("gc: deleting %s %s/%s failed: %s", kind.key, namespace, name, exc)


def collect_orphans(after_id: int = 0, batch_size: int = 500) -> tuple[Progress, int | None]:
    """One batch of owner links: delete dependents whose owners no longer exist.
    Returns the progress and the id to resume after (None when done)."""
    from .models import OwnerLink

    progress = Progress()
    links = list(OwnerLink.objects.filter(id__gt=after_id).order_by("id")[:batch_size])
    if not links:
        return progress, None
    alive = _existing_uids({str(link.owner_uid) for link in links})
    dependents = {link.dependent_uid for link in links}
    all_links = OwnerLink.objects.filter(dependent_uid__in=dependents)
    owners_of: dict[uuid.UUID, set[str]] = {}
    for link in all_links:
        owners_of.setdefault(link.dependent_uid, set()).add(str(link.owner_uid))
    alive |= _existing_uids(set().union(*owners_of.values()) - alive)
    for link in links:
        if owners_of.get(link.dependent_uid, set()) & alive:
            continue
        kind = registry.lookup(link.dependent_kind)
        if kind is not None:
            _delete_quietly(kind, link.dependent_namespace, link.dependent_name, progress)
    progress.more = len(links) == batch_size
    return progress, links[-1].id if progress.more else None


def collect_dependents(owner_uid: uuid.UUID | str, batch_size: int = 500) -> Progress:
    """Event path: an owner just went away (or is deleting in the foreground)."""
    from .models import OwnerLink

    progress = Progress()
    links = list(OwnerLink.objects.filter(owner_uid=owner_uid)[:batch_size])
    if not links:
        return progress
    dependents = {link.dependent_uid for link in links}
    owners_of: dict[uuid.UUID, set[str]] = {}
    for link in OwnerLink.objects.filter(dependent_uid__in=dependents):
        owners_of.setdefault(link.dependent_uid, set()).add(str(link.owner_uid))
    foreground = _foreground_owners(set().union(*owners_of.values()))
    alive = _existing_uids(set().union(*owners_of.values())) - foreground
    for link in links:
        if owners_of[link.dependent_uid] & alive:
            continue
        kind = registry.lookup(link.dependent_kind)
        if kind is not None:
            _delete_quietly(kind, link.dependent_namespace, link.dependent_name, progress)
    progress.more = len(links) == batch_size
    return progress


def _foreground_owners(uids: set[str]) -> set[str]:
    """Owners being deleted in the foreground count as gone for their dependents."""
    found: set[str] = set()
    for kind in registry.stored():
        rows = kind.model.objects.filter(uid__in=uids, deletion_timestamp__isnull=False)
        found |= {str(o.uid) for o in rows if store.FOREGROUND in (o.finalizers or [])}
    return found


def release_foreground(batch_size: int = 500) -> Progress:
    """Drop ``foregroundDeletion`` from owners whose dependents are all gone."""
    from .models import OwnerLink

    progress = Progress()
    for kind in registry.stored():
        # oldest deletion first, by the deletion_timestamp index: ordered by pk alone, a LIMIT
        # tempts the planner to walk the whole primary key for the few rows being deleted
        rows = kind.model.objects.filter(deletion_timestamp__isnull=False).order_by(
            "deletion_timestamp", "pk"
        )
        for obj in rows[:batch_size]:
            if store.FOREGROUND not in (obj.finalizers or []):
                continue
            if OwnerLink.has_dependents(obj.uid):
                progress.deleted += collect_dependents(obj.uid, batch_size).deleted
                continue
            store.remove_finalizer(kind, obj, store.FOREGROUND, context=GARBAGE_COLLECTOR)
            progress.released += 1
    return progress


def finalize_namespaces(batch_size: int = 500) -> Progress:
    """Delete the content of terminating Namespaces; release each once it is empty."""
    from portal.models import Namespace

    progress = Progress()
    ns_kind = registry.get("", "v1", "namespaces")
    for namespace in Namespace.objects.filter(deletion_timestamp__isnull=False)[:batch_size]:
        remaining = 0
        for kind in registry.stored():
            if not kind.namespaced:
                continue
            rows = list(
                kind.model.objects.filter(namespace=namespace.name).values_list(
                    "name", "deletion_timestamp"
                )[:batch_size]
            )
            remaining += len(rows)
            for name, deleting in rows:
                if deleting is None:
                    _delete_quietly(kind, namespace.name, name, progress, NAMESPACE_CONTROLLER)
        if remaining:
            progress.more = True
            continue
        with transaction.atomic():
            spec = dict(namespace.spec or {})
            spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != "kubernetes"]
            assert ns_kind is not None  # a Namespace exists, so its kind is registered
            store.patch(
                ns_kind,
                None,
                namespace.name,
                {"spec": {"finalizers": spec["finalizers"]}},
                context=NAMESPACE_CONTROLLER,
            )
            progress.released += 1
    return progress


def expire_events(ttl_seconds: float, batch_size: int = 500) -> Progress:
    """Delete Events last seen more than ``ttl_seconds`` ago (kube-apiserver's event TTL),
    oldest first, at most ``batch_size``: an indexed range on ``last_seen``. An Event bumped
    meanwhile (locked by its writer, or no longer expired) stays. Watches see each go."""
    from datetime import timedelta

    from django.utils import timezone

    from portal.models import Event

    from . import history
    from .models import OwnerLink

    kind = registry.for_model(Event)
    if kind is None:
        return Progress()
    cutoff = timezone.now() - timedelta(seconds=ttl_seconds)
    with transaction.atomic():
        doomed = list(
            Event.objects.select_for_update(skip_locked=True)
            .filter(last_seen__lt=cutoff)
            .order_by("last_seen", "pk")[:batch_size]
        )
        if not doomed:
            return Progress()
        Event.objects.filter(pk__in=[event.pk for event in doomed]).delete()
        last = history.allocate(len(doomed))
        for index, event in enumerate(doomed):
            event.resource_version = last - len(doomed) + 1 + index
        history.record_many(kind, doomed, history.DELETED)
        OwnerLink.objects.filter(dependent_uid__in=[event.uid for event in doomed]).delete()
    return Progress(deleted=len(doomed), more=len(doomed) == batch_size)
