"""Run.spec.workspace (RunWorkspaceReference) and Run.spec.affinity (RunAffinity), seeds 000/001."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from portal.machinery import errors
from portal.machinery.labels import validate_label_selector
from portal.machinery.serializers import FreeformObjectField, StrictSerializer, field_error
from portal.machinery.validation import DNS1123_SUBDOMAIN_MAX_LENGTH, dns1123_subdomain_errors

from .fields import BoundedListField, StrictCharField, StrictIntegerField, raise_causes

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
        messages = dns1123_subdomain_errors(value)
        if messages:
            raise field_error(f'Invalid value: "{value}": {messages[0]}')
        return value


class LabelSelectorField(FreeformObjectField):
    """metav1.LabelSelector that must select something: matchLabels or matchExpressions."""

    def to_internal_value(self, data: Any) -> dict:
        data = super().to_internal_value(data)
        raise_causes(validate_label_selector(data, ""))
        if not data.get("matchLabels") and not data.get("matchExpressions"):
            raise field_error(
                "Invalid value: labelSelector must not be empty: set matchLabels "
                "or matchExpressions"
            )
        return data


class RunAffinityTermSerializer(StrictSerializer):
    labelSelector = LabelSelectorField()
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
