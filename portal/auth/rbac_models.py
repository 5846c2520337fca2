"""rbac.authorization.k8s.io/v1 kinds stored in Django, editable in the admin."""

from __future__ import annotations

from django.db import models

from portal.machinery.objects import ClusterObject, NamespacedObject, unique_name_constraint


class Role(NamespacedObject):
    rules = models.JSONField(default=list, blank=True)

    class Meta(NamespacedObject.Meta):
        app_label = "portal"
        constraints = [unique_name_constraint("role", namespaced=True)]


class ClusterRole(ClusterObject):
    rules = models.JSONField(default=list, blank=True)

    class Meta(ClusterObject.Meta):
        app_label = "portal"
        constraints = [unique_name_constraint("clusterrole", namespaced=False)]


class RoleBinding(NamespacedObject):
    role_ref = models.JSONField(default=dict)
    subjects = models.JSONField(default=list, blank=True)

    class Meta(NamespacedObject.Meta):
        app_label = "portal"
        constraints = [unique_name_constraint("rolebinding", namespaced=True)]


class ClusterRoleBinding(ClusterObject):
    role_ref = models.JSONField(default=dict)
    subjects = models.JSONField(default=list, blank=True)

    class Meta(ClusterObject.Meta):
        app_label = "portal"
        constraints = [unique_name_constraint("clusterrolebinding", namespaced=False)]
