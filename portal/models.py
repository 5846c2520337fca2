"""Models of the portal itself: Namespace, Secret, ConfigMap, the owner-reference index and the
RBAC kinds."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from portal.auth.rbac_models import ClusterRole, ClusterRoleBinding, Role, RoleBinding
from portal.encryption import EncryptedJSONField
from portal.machinery.objects import ClusterObject, NamespacedObject, unique_name_constraint

__all__ = [
    "ClusterRole",
    "ClusterRoleBinding",
    "ConfigMap",
    "Event",
    "Namespace",
    "OwnerLink",
    "ResourceVersionCounter",
    "Role",
    "RoleBinding",
    "Secret",
    "WatchEvent",
    "WorkItem",
]


class Namespace(ClusterObject):
    """v1 Namespace: spec.finalizers (``kubernetes``) hold it until its content is gone."""

    spec = models.JSONField(default=dict, blank=True)
    status = models.JSONField(default=dict, blank=True)
    phase = models.CharField(max_length=16, default="Active", db_index=True, editable=False)

    class Meta(ClusterObject.Meta):
        constraints = [unique_name_constraint("namespace", namespaced=False)]

    def sync_columns(self) -> None:
        self.phase = "Terminating" if self.deletion_timestamp is not None else "Active"
        self.status = {**(self.status or {}), "phase": self.phase}


class Secret(NamespacedObject):
    """v1 Secret: ``data`` maps keys to base64 values, encrypted at rest when keys are set."""

    type = models.CharField(max_length=253, default="Opaque", db_index=True)
    data = EncryptedJSONField(default=dict, blank=True)
    immutable = models.BooleanField(null=True, blank=True)
    # ``stringData`` is write-only: folded into ``data`` on every write, never stored.
    string_data = None

    class Meta(NamespacedObject.Meta):
        constraints = [unique_name_constraint("secret", namespaced=True)]


class ConfigMap(NamespacedObject):
    """v1 ConfigMap: ``data`` maps keys to strings, ``binaryData`` to base64 values."""

    data = models.JSONField(default=dict, blank=True)
    binary_data = models.JSONField(default=dict, blank=True)
    immutable = models.BooleanField(null=True, blank=True)

    class Meta(NamespacedObject.Meta):
        constraints = [unique_name_constraint("configmap", namespaced=True)]


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
        constraints = [
            models.UniqueConstraint(fields=("owner_uid", "dependent_uid"), name="ownerlink_unique")
        ]

    def __str__(self) -> str:
        return f"{self.dependent_kind} {self.dependent_name} -> {self.owner_uid}"

    @classmethod
    def record(cls, kind, obj, *, created: bool = False) -> None:
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
        cls.objects.bulk_create(
            [
                cls(
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
    def forget(cls, uid) -> None:
        cls.objects.filter(dependent_uid=uid).delete()

    @classmethod
    def has_dependents(cls, owner_uid) -> bool:
        return cls.objects.filter(owner_uid=owner_uid).exists()

    @classmethod
    def orphan_dependents(cls, owner_uid) -> None:
        """propagationPolicy=Orphan: strip the owner's references from its dependents."""
        from portal.machinery import store
        from portal.machinery.gc import GARBAGE_COLLECTOR
        from portal.machinery.registry import registry

        for link in list(cls.objects.filter(owner_uid=owner_uid)):
            kind = registry.lookup(link.dependent_kind)
            if kind is None:
                continue
            try:
                dependent = store.get_object(kind, link.dependent_namespace, link.dependent_name)
            except Exception:  # already gone
                link.delete()
                continue
            refs = [r for r in dependent.owner_references if r.get("uid") != str(owner_uid)]
            store.patch(
                kind,
                link.dependent_namespace or None,
                link.dependent_name,
                {"metadata": {"ownerReferences": refs or None}},
                context=GARBAGE_COLLECTOR,
            )


class ResourceVersionCounter(models.Model):
    """The one row holding the cluster's resourceVersion: every write takes the next value in
    its own transaction, so versions are committed in the order they are given (the row lock
    serializes writers at that point) and a watch resumed after N misses nothing.

    ``compacted_through``: the newest version whose history was compacted away; a watch from
    an older version is 410 Expired."""

    value = models.BigIntegerField(default=0)
    compacted_through = models.BigIntegerField(default=0)

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
        constraints = [models.UniqueConstraint(fields=("queue", "key"), name="workitem_unique_key")]
        indexes = [models.Index(fields=("queue", "due_at"), name="workitem_due")]

    def __str__(self) -> str:
        return f"{self.queue}: {self.key}"


class Event(NamespacedObject):
    """v1 Event: what happened to an object (``involvedObject``), recorded by a controller.

    The wire fields are kept as sent (timestamps as RFC 3339 strings); the ``involved_*``
    columns and ``last_seen`` are derived from them on every write, so a fieldSelector on
    involvedObject and the collector's expiry are indexed queries. events.k8s.io/v1 serves
    the same rows in its own shape."""

    # Events are written as often as anything here (one per bound Run), so they keep only the
    # indexes their reads use: (namespace, name) is unique, the involvedObject and expiry
    # columns are indexed below; name, namespace and creation time alone are not looked up
    name = models.CharField(max_length=253)
    namespace = models.CharField(max_length=63)
    creation_timestamp = models.DateTimeField(default=timezone.now, editable=False)
    involved_object = models.JSONField(default=dict, blank=True)
    reason = models.CharField(max_length=128, blank=True, default="")
    message = models.TextField(blank=True, default="")
    type = models.CharField(max_length=16, blank=True, default="")
    count = models.IntegerField(null=True, blank=True)
    first_timestamp = models.CharField(max_length=40, null=True, blank=True)  # noqa: DJ001 - absent, never ""
    last_timestamp = models.CharField(max_length=40, null=True, blank=True)  # noqa: DJ001 - absent, never ""
    source = models.JSONField(null=True, blank=True)
    reporting_component = models.CharField(max_length=128, blank=True, default="")
    reporting_instance = models.CharField(max_length=128, blank=True, default="")
    action = models.CharField(max_length=128, blank=True, default="")
    event_time = models.CharField(max_length=40, null=True, blank=True)  # noqa: DJ001 - absent, never ""
    series = models.JSONField(null=True, blank=True)
    related = models.JSONField(null=True, blank=True)
    # derived, indexed
    involved_kind = models.CharField(max_length=253, blank=True, default="", editable=False)
    involved_name = models.CharField(max_length=253, blank=True, default="", editable=False)
    involved_namespace = models.CharField(max_length=63, blank=True, default="", editable=False)
    involved_uid = models.CharField(
        max_length=64, blank=True, default="", db_index=True, editable=False
    )
    last_seen = models.DateTimeField(null=True, blank=True, db_index=True, editable=False)

    class Meta(NamespacedObject.Meta):
        constraints = [unique_name_constraint("event", namespaced=True)]
        indexes = [
            models.Index(
                fields=("namespace", "involved_kind", "involved_name"), name="event_involved"
            )
        ]

    def sync_columns(self) -> None:
        from portal.machinery.conditions import time_or_none

        involved = self.involved_object if isinstance(self.involved_object, dict) else {}
        self.involved_kind = str(involved.get("kind") or "")[:253]
        self.involved_name = str(involved.get("name") or "")[:253]
        self.involved_namespace = str(involved.get("namespace") or "")[:63]
        self.involved_uid = str(involved.get("uid") or "")[:64]
        self.last_seen = (
            time_or_none(self.last_timestamp)
            or time_or_none(self.event_time)
            or time_or_none(self.first_timestamp)
            or self.creation_timestamp
        )
