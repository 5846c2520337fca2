"""The ObjectMeta abstract models every resource shares.

A row is a Kubernetes object: metadata columns, plus one JSON column per top-level body field
(``spec``, ``status``; RBAC kinds use ``rules``/``roleRef``/``subjects``). Writes go through
``portal.machinery.store`` so generation/resourceVersion rules hold everywhere.
"""

from __future__ import annotations

import uuid
from typing import ClassVar

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
