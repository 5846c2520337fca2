"""The machinery's own tables: the owner-reference index, the resourceVersion counter, the
watch history and the controllers' work queue.

They belong to the ``portal`` app (``app_label``; ``portal.models`` imports them so Django
finds them) but live here so the machinery reads them without importing ``portal.models``,
which holds kinds built on the machinery. Behaviour that needs the store (orphaning
dependents) is ``portal.machinery.gc``, not the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models
from django.utils import timezone

if TYPE_CHECKING:
    from .registry import ResourceKind


class OwnerLink(models.Model):
    """One row per metadata.ownerReferences entry, so dependents of a uid are one indexed query
    (JSON containment is not portable to SQLite)."""

    owner_uid = models.UUIDField(db_index=True)
    dependent_kind = models.CharField(max_length=255)  # ResourceKind.key
    dependent_version = models.CharField(max_length=32)
    dependent_uid = models.UUIDField(db_index=True)
    dependent_namespace = models.CharField(max_length=63, blank=True, default="")
    dependent_name = models.CharField(max_length=253)

    class Meta:
        app_label = "portal"
        constraints = [
            models.UniqueConstraint(fields=("owner_uid", "dependent_uid"), name="ownerlink_unique")
        ]

    def __str__(self) -> str:
        return f"{self.dependent_kind} {self.dependent_name} -> {self.owner_uid}"

    @classmethod
    def record(cls, kind: ResourceKind, obj: Any, *, created: bool = False) -> None:
        """Keep the links of ``obj`` equal to its ownerReferences; ``created``: it is new, so
        it has no links yet (a create with no owners costs no query)."""
        owners = {ref["uid"] for ref in obj.owner_references or [] if ref.get("uid")}
        if created:
            known: set[str] = set()
        else:
            cls.objects.filter(dependent_uid=obj.uid).exclude(owner_uid__in=owners).delete()
            known = set(
                map(
                    str,
                    cls.objects.filter(dependent_uid=obj.uid).values_list("owner_uid", flat=True),
                )
            )
        if not owners - known:
            return
        OwnerLink.objects.bulk_create(
            [
                OwnerLink(
                    owner_uid=uid,
                    dependent_kind=kind.key,
                    dependent_version=kind.version,
                    dependent_uid=obj.uid,
                    dependent_namespace=getattr(obj, "namespace", "") or "",
                    dependent_name=obj.name,
                )
                for uid in sorted(owners - known)
            ]
        )

    @classmethod
    def forget(cls, uid: Any) -> None:
        cls.objects.filter(dependent_uid=uid).delete()

    @classmethod
    def has_dependents(cls, owner_uid: Any) -> bool:
        return cls.objects.filter(owner_uid=owner_uid).exists()


class ResourceVersionCounter(models.Model):
    """The one row holding the cluster's resourceVersion: every write takes the next value in
    its own transaction, so versions are committed in the order they are given (the row lock
    serializes writers at that point) and a watch resumed after N misses nothing.

    ``compacted_through``: the newest version whose history was compacted away; a watch from
    an older version is 410 Expired."""

    value = models.BigIntegerField(default=0)
    compacted_through = models.BigIntegerField(default=0)

    class Meta:
        app_label = "portal"

    def __str__(self) -> str:
        return f"resourceVersion {self.value} (compacted through {self.compacted_through})"


class WatchEvent(models.Model):
    """One change of one object, written in the transaction that changed it (the watch
    history): ADDED, MODIFIED or DELETED with the object as it was then."""

    resource_version = models.BigIntegerField(primary_key=True)
    kind_key = models.CharField(max_length=255)  # ResourceKind.key, e.g. runs.kruntimes.io
    namespace = models.CharField(max_length=63, blank=True, default="")
    name = models.CharField(max_length=253)
    type = models.CharField(max_length=16)
    object = models.JSONField()
    # the labels before this change: a label-selected watch turns a change that leaves (or
    # enters) the selection into DELETED (or ADDED), as kube-apiserver does
    previous_labels = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        app_label = "portal"
        indexes = [models.Index(fields=("kind_key", "resource_version"))]

    def __str__(self) -> str:
        return f"{self.resource_version} {self.type} {self.kind_key} {self.namespace}/{self.name}"


class WorkItem(models.Model):
    """A key one controller has to reconcile (``portal.machinery.workqueue``): one row per
    (queue, key) however many wake-ups arrived, held by one worker at a time."""

    queue = models.CharField(max_length=64)
    key = models.CharField(max_length=512)
    due_at = models.DateTimeField()  # not processed before (a failed key's backoff)
    # a wake-up arrived while a worker held the key: it is processed once more after
    dirty = models.BooleanField(default=True)
    claimed_until = models.DateTimeField(null=True, blank=True)  # a worker holds it until
    failures = models.PositiveIntegerField(default=0)  # in a row: the backoff's exponent
    added_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "portal"
        constraints = [models.UniqueConstraint(fields=("queue", "key"), name="workitem_unique_key")]
        indexes = [models.Index(fields=("queue", "due_at"), name="workitem_due")]

    def __str__(self) -> str:
        return f"{self.queue}: {self.key}"
