"""A test-only namespaced kind (Widget) and cluster kind (Gadget) exercising the machinery."""

from rest_framework import serializers

from portal.machinery import errors
from portal.machinery.registry import Column, ResourceKind, registry
from portal.machinery.serializers import StrictSerializer

GROUP = "testing.kruntimes.io"


class PartSerializer(StrictSerializer):
    name = serializers.CharField(max_length=16)
    count = serializers.IntegerField(min_value=0, default=1)


class WidgetSpecSerializer(StrictSerializer):
    size = serializers.IntegerField(min_value=0, max_value=10)
    color = serializers.ChoiceField(choices=["red", "green", "blue"], default="red")
    parts = PartSerializer(many=True, required=False)
    note = serializers.CharField(required=False, allow_blank=True, max_length=32)


class WidgetStatusSerializer(StrictSerializer):
    phase = serializers.ChoiceField(choices=["Pending", "Ready"], required=False)
    conditions = serializers.ListField(child=serializers.DictField(), required=False)


def color_is_immutable(new, old):
    if old is not None and new["spec"].get("color") != old["spec"].get("color"):
        return [errors.invalid("spec.color", "field is immutable")]
    return []


def register() -> None:
    from .models import Gadget, Widget

    registry.register(
        ResourceKind(
            group=GROUP,
            version="v1",
            kind="Widget",
            plural="widgets",
            model=Widget,
            short_names=("wd",),
            body={"spec": WidgetSpecSerializer, "status": WidgetStatusSerializer},
            validators=(color_is_immutable,),
            columns=(
                Column("SIZE", lambda o: o.spec.get("size")),
                Column("PHASE", lambda o: o.phase),
                Column("COLOR", lambda o: o.spec.get("color"), wide=True),
            ),
        )
    )
    registry.register(
        ResourceKind(
            group=GROUP,
            version="v1",
            kind="Gadget",
            plural="gadgets",
            model=Gadget,
            namespaced=False,
            body={"spec": WidgetSpecSerializer, "status": WidgetStatusSerializer},
        )
    )
