"""The ObjectMeta abstract models every resource shares.

A row is a Kubernetes object: metadata columns, plus one JSON column per top-level body field
(``spec``, ``status``; RBAC kinds use ``rules``/``roleRef``/``subjects``). Writes go through
``portal.machinery.store`` so generation/resourceVersion rules hold everywhere.
"""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

from django.db import models
from django.utils import timezone


class ObjectMeta(models.Model):
    """Cluster-scoped object metadata (namespaced kinds extend ``NamespacedObject``)."""

    name = models.CharField(max_length=253, db_index=True)
    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    generation = models.BigIntegerField(default=1, editable=False)
    resource_version = models.BigIntegerField(default=1, editable=False)
    labels = models.JSONField(default=dict, blank=True)
    annotations = models.JSONField(default=dict, blank=True)
    finalizers = models.JSONField(default=list, blank=True)
    owner_references = models.JSONField(default=list, blank=True)
    # metadata.managedFields: who owns which fields (portal.machinery.managed_fields)
    managed_fields = models.JSONField(default=list, blank=True)
    creation_timestamp = models.DateTimeField(default=timezone.now, editable=False, db_index=True)
    deletion_timestamp = models.DateTimeField(null=True, blank=True, editable=False, db_index=True)

    namespaced = False

    class Meta:
        abstract = True
        ordering: ClassVar[tuple[str, ...]] = ("name",)
        constraints = ()

    def __str__(self) -> str:
        return self.name

    @property
    def is_terminating(self) -> bool:
        return self.deletion_timestamp is not None

    @classmethod
    def from_db(cls, db: str | None, field_names: Any, values: Any) -> Any:
        obj = super().from_db(db, field_names, values)
        obj.changes_announced()
        return obj

    def changes_announced(self) -> None:
        """Remember what this object is now (as read, or as its last change was announced to
        its kind's watchers: ``history.announce``), so a watcher tells what moved since."""
        self._desired_read = self.desired_state()

    def desired_state(self) -> tuple[Any, ...]:
        """What a writer other than the status writer sets: the spec (its generation), the
        labels, annotations and finalizers, a deletion."""
        fields = self.__dict__
        return (
            fields.get("generation"),
            _copied(fields.get("labels")),
            _copied(fields.get("annotations")),
            _copied(fields.get("finalizers")),
            fields.get("deletion_timestamp"),
        )

    @property
    def desired_changed(self) -> bool:
        """Whether anything but the status moved since the object was read (a new object:
        always). A status write never moves it: a controller watching its own kind tells its
        own status writes from what it is asked to do by this."""
        read = getattr(self, "_desired_read", None)
        return read is None or read != self.desired_state()


def _copied(value: Any) -> Any:
    """A JSON column's value as it is now (a row may hold any JSON shape: never raises)."""
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    return value


class ClusterObject(ObjectMeta):
    class Meta(ObjectMeta.Meta):
        abstract = True


class NamespacedObject(ObjectMeta):
    namespace = models.CharField(max_length=63, db_index=True)

    namespaced = True

    class Meta(ObjectMeta.Meta):
        abstract = True
        ordering = ("namespace", "name")

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def unique_name_constraint(model_label: str, namespaced: bool) -> models.UniqueConstraint:
    """The (namespace, name) key of a kind; each concrete model adds it to its Meta."""
    fields = ("namespace", "name") if namespaced else ("name",)
    return models.UniqueConstraint(fields=fields, name=f"{model_label}_unique_name")
