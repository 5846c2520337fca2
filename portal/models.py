"""Models of the portal itself: Namespace, Secret, ConfigMap, Event and the RBAC kinds; the
machinery's tables (owner links, resourceVersion, watch history, work queue) are imported from
``portal.machinery.models`` so Django finds them."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from portal.auth.rbac_models import ClusterRole, ClusterRoleBinding, Role, RoleBinding
from portal.encryption import EncryptedJSONField
from portal.machinery.models import OwnerLink, ResourceVersionCounter, WatchEvent, WorkItem
from portal.machinery.objects import ClusterObject, NamespacedObject, unique_name_constraint

__all__ = [
    "ClusterRole",
    "ClusterRoleBinding",
    "ConfigMap",
    "ControllerRevision",
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


class ControllerRevision(NamespacedObject):
    """apps/v1 ControllerRevision: ``data`` is an immutable snapshot a controller keeps of
    what it runs (a WorkflowRun's resolved definitions), ``revision`` its number."""

    data = models.JSONField(null=True, blank=True)
    revision = models.BigIntegerField(default=0)

    class Meta(NamespacedObject.Meta):
        constraints = [unique_name_constraint("controllerrevision", namespaced=True)]


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
