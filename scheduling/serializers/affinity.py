"""Run.spec.workspace (RunWorkspaceReference) and Run.spec.affinity (RunAffinity), seeds 000/001."""

from __future__ import annotations

from rest_framework import serializers

from portal.machinery import errors
from portal.machinery.fields.bounded import BoundedListField
from portal.machinery.fields.names import checked
from portal.machinery.fields.selectors import LabelSelectorField
from portal.machinery.serializers import (
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    field_error,
)
from portal.machinery.validation import DNS1123_SUBDOMAIN_MAX_LENGTH, dns1123_subdomain_errors

WORKSPACE_KIND = "PersistentWorkspace"
WORKSPACE_API_GROUP = "kruntimes.io/v1alpha1"
TOPOLOGY_RUNTIME_POD = "kruntimes.io/runtime-pod"
MAX_AFFINITY_TERMS = 32
MIN_WEIGHT, MAX_WEIGHT = 1, 100


class RunWorkspaceReferenceSerializer(StrictSerializer):
    """A namespace-local PersistentWorkspace; omitted kind/apiGroup are stored filled in."""

    name = StrictCharField()
    kind = serializers.ChoiceField(choices=[WORKSPACE_KIND], default=WORKSPACE_KIND)
    apiGroup = serializers.ChoiceField(choices=[WORKSPACE_API_GROUP], default=WORKSPACE_API_GROUP)

    def validate_name(self, value: str) -> str:
        if len(value.encode("utf-8", "surrogatepass")) > DNS1123_SUBDOMAIN_MAX_LENGTH:
            raise field_error(
                errors.too_long("", DNS1123_SUBDOMAIN_MAX_LENGTH).message, errors.TOO_LONG
            )
        return checked(value, dns1123_subdomain_errors(value))


class RunAffinityTermSerializer(StrictSerializer):
    labelSelector = LabelSelectorField(allow_empty=False)
    topologyKey = serializers.ChoiceField(choices=[TOPOLOGY_RUNTIME_POD])


class WeightedRunAffinityTermSerializer(StrictSerializer):
    weight = StrictIntegerField(min_value=MIN_WEIGHT, max_value=MAX_WEIGHT)
    runAffinityTerm = RunAffinityTermSerializer()


class RunAffinityRulesSerializer(StrictSerializer):
    requiredDuringSchedulingIgnoredDuringExecution = BoundedListField(
        child=RunAffinityTermSerializer(), max_items=MAX_AFFINITY_TERMS, required=False
    )
    preferredDuringSchedulingIgnoredDuringExecution = BoundedListField(
        child=WeightedRunAffinityTermSerializer(), max_items=MAX_AFFINITY_TERMS, required=False
    )


class RunAffinitySerializer(StrictSerializer):
    """Run-to-Run placement: required/preferred terms over namespace-local Run labels."""

    runAffinity = RunAffinityRulesSerializer(required=False)
    runAntiAffinity = RunAffinityRulesSerializer(required=False)
