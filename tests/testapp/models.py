from django.db import models

from portal.machinery.objects import ClusterObject, NamespacedObject, unique_name_constraint


class Widget(NamespacedObject):
    spec = models.JSONField(default=dict)
    status = models.JSONField(default=dict)
    phase = models.CharField(max_length=32, blank=True, default="")

    class Meta(NamespacedObject.Meta):
        constraints = [unique_name_constraint("widget", namespaced=True)]

    def sync_columns(self) -> None:
        self.phase = (self.status or {}).get("phase", "")


class Gadget(ClusterObject):
    spec = models.JSONField(default=dict)
    status = models.JSONField(default=dict)

    class Meta(ClusterObject.Meta):
        constraints = [unique_name_constraint("gadget", namespaced=False)]
