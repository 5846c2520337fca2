"""A test-only namespaced kind (Widget) and cluster kind (Gadget) exercising the machinery."""

from rest_framework import serializers

from portal.machinery import errors
from portal.machinery.registry import Column, ResourceKind, registry
from portal.machinery.serializers import StrictSerializer

GROUP = "testing.kruntimes.io"


class PartSerializer(StrictSerializer):
    """One part a widget is made of."""

    name = serializers.CharField(max_length=16, help_text="The part's name.")
    count = serializers.IntegerField(min_value=0, default=1, help_text="How many of the part.")


class WidgetSpecSerializer(StrictSerializer):
    """The widget as wanted."""

    size = serializers.IntegerField(min_value=0, max_value=10, help_text="The size, 0 to 10.")
    color = serializers.ChoiceField(
        choices=["red", "green", "blue"], default="red", help_text="The colour; immutable."
    )
    parts = PartSerializer(many=True, required=False, help_text="What the widget is made of.")
    note = serializers.CharField(
        required=False, allow_blank=True, max_length=32, help_text="A free note."
    )


class WidgetStatusSerializer(StrictSerializer):
    """The widget as observed; set by the server."""

    phase = serializers.ChoiceField(
        choices=["Pending", "Ready"], required=False, help_text="Pending or Ready."
    )
    conditions = serializers.ListField(
        child=serializers.DictField(), required=False, help_text="What was observed."
    )


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
            description="Widget is a namespaced kind the tests exercise the machinery with.",
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
            description="Gadget is a cluster-scoped kind the tests exercise the machinery with.",
            model=Gadget,
            namespaced=False,
            body={"spec": WidgetSpecSerializer, "status": WidgetStatusSerializer},
        )
    )
