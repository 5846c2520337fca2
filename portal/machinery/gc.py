"""Garbage collection: the background half of Kubernetes deletion.

Level-triggered and batched: each call does a bounded amount of work and says where to
resume, so a beat pass never runs one unbounded query and a lost message only delays.
- one owner at a time (a key of the ``gc`` work queue, ``gc_queue``): dependents whose owners
  are all gone are deleted (honouring their finalizers), and an owner deleted in the
  foreground keeps ``foregroundDeletion`` until its dependents are gone;
- beat's resync finds the owners to look at (gone, or deleting in the foreground);
- a terminating Namespace's content is deleted, then its ``kubernetes`` finalizer released.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

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
    started: int = 0  # deletes asked for (a dependent held by finalizers is not gone yet)
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
    uid: uuid.UUID | None = None,
) -> bool:
    """False when the object (of that ``uid``, if given) is no longer there."""
    preconditions = {"uid": str(uid)} if uid is not None else None
    try:
        _, gone = store.delete(
            kind, namespace or None, name, preconditions=preconditions, context=context
        )
        progress.deleted += gone
    except errors.StatusError as exc:
        if exc.code in (404, 409):  # someone else got there first (and maybe reused the name)
            return False
        log.warning("gc: deleting %s %s/%s failed: %s", kind.key, namespace, name, exc)
    return True


def gone_owners(after_id: int = 0, batch_size: int = 500) -> tuple[set[str], int | None]:
    """The resync: one batch of owner links, by id after ``after_id``; the UIDs of the owners
    that no longer exist (their keys are added to the gc queue). Returns them and the id to
    resume after (None when done)."""
    from .models import OwnerLink

    links = list(OwnerLink.objects.filter(id__gt=after_id).order_by("id")[:batch_size])
    if not links:
        return set(), None
    owners = {str(link.owner_uid) for link in links}
    more = len(links) == batch_size
    return owners - _existing_uids(owners), links[-1].id if more else None


def foreground_owners(batch_size: int = 500) -> list[str]:
    """The resync: the UIDs of owners deleting in the foreground (oldest deletion first,
    ``batch_size`` per kind at most)."""
    found: list[str] = []
    for kind in registry.stored():
        # by the deletion_timestamp index: ordered by pk alone, a LIMIT tempts the planner to
        # walk the whole primary key for the few rows being deleted
        rows = kind.model.objects.filter(deletion_timestamp__isnull=False).order_by(
            "deletion_timestamp", "pk"
        )
        found += [
            str(obj.uid)
            for obj in rows.only("uid", "finalizers")[:batch_size]
            if store.FOREGROUND in (obj.finalizers or [])
        ]
    return found


def _deleting_dependents(links: list[Any]) -> set[uuid.UUID]:
    """The dependents of ``links`` already deleting (held by their finalizers)."""
    by_kind: dict[str, set[uuid.UUID]] = {}
    for link in links:
        by_kind.setdefault(link.dependent_kind, set()).add(link.dependent_uid)
    found: set[uuid.UUID] = set()
    for key, uids in by_kind.items():
        kind = registry.lookup(key)
        if kind is not None and not kind.read_only:
            rows = kind.model.objects.filter(uid__in=uids, deletion_timestamp__isnull=False)
            found |= set(rows.values_list("uid", flat=True))
    return found


def collect_dependents(
    owner_uid: uuid.UUID | str, batch_size: int = 500, after_id: int = 0
) -> tuple[Progress, int | None]:
    """One page of an owner's links, by id after ``after_id``: delete the dependents none of
    whose owners lives (an owner deleting in the foreground counts as gone); those already
    deleting are left to their finalizers. Returns the progress (``started``: deletes asked
    for) and the id to resume after (None: no more links)."""
    from .models import OwnerLink

    progress = Progress()
    links = list(
        OwnerLink.objects.filter(owner_uid=owner_uid, id__gt=after_id).order_by("id")[:batch_size]
    )
    if not links:
        return progress, None
    dependents = {link.dependent_uid for link in links}
    owners_of: dict[uuid.UUID, set[str]] = {}
    for link in OwnerLink.objects.filter(dependent_uid__in=dependents):
        owners_of.setdefault(link.dependent_uid, set()).add(str(link.owner_uid))
    foreground = _foreground_owners(set().union(*owners_of.values()))
    alive = _existing_uids(set().union(*owners_of.values())) - foreground
    deleting = _deleting_dependents(links)
    for link in links:
        if link.dependent_uid in deleting or owners_of[link.dependent_uid] & alive:
            continue
        kind = registry.lookup(link.dependent_kind)
        if kind is not None:
            progress.started += 1
            namespace, name, uid = link.dependent_namespace, link.dependent_name, link.dependent_uid
            if not _delete_quietly(kind, namespace, name, progress, uid=uid):
                OwnerLink.forget(uid)  # gone without a word: its links must not hold the owner
    return progress, links[-1].id if len(links) == batch_size else None


def _foreground_owners(uids: set[str]) -> set[str]:
    """Owners being deleted in the foreground count as gone for their dependents."""
    found: set[str] = set()
    for kind in registry.stored():
        rows = kind.model.objects.filter(uid__in=uids, deletion_timestamp__isnull=False)
        found |= {str(o.uid) for o in rows if store.FOREGROUND in (o.finalizers or [])}
    return found


def _find(uid: uuid.UUID) -> tuple[ResourceKind, Any] | None:
    for kind in registry.stored():
        obj = kind.model.objects.filter(uid=uid).first()
        if obj is not None:
            return kind, obj
    return None


def collect_owner(owner_uid: uuid.UUID, batch_size: int = 500) -> Progress:
    """One key of the gc queue: the dependents of an owner that is gone or deleting in the
    foreground are deleted, ``batch_size`` deletes at most (``more``: call again); a
    foreground owner whose dependents are all gone is released. A living owner keeps its
    dependents."""
    from .models import OwnerLink

    found = _find(owner_uid)
    if found is not None and not (
        found[1].deletion_timestamp is not None and store.FOREGROUND in (found[1].finalizers or [])
    ):
        return Progress()
    progress, after = Progress(), 0
    while True:
        page, resume = collect_dependents(owner_uid, batch_size, after)
        progress.deleted += page.deleted
        progress.started += page.started
        if resume is None:
            break
        if progress.started >= batch_size:
            progress.more = True
            return progress
        after = resume
    if found is not None and not OwnerLink.has_dependents(owner_uid):
        kind, obj = found
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
