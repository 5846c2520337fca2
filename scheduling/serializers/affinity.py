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

    name = StrictCharField(
        help_text="The PersistentWorkspace's name, a DNS subdomain in the Run's namespace."
    )
    kind = serializers.ChoiceField(
        help_text="Always PersistentWorkspace (the default).",
        choices=[WORKSPACE_KIND],
        default=WORKSPACE_KIND,
    )
    apiGroup = serializers.ChoiceField(
        help_text="Always kruntimes.io/v1alpha1 (the default).",
        choices=[WORKSPACE_API_GROUP],
        default=WORKSPACE_API_GROUP,
    )

    def validate_name(self, value: str) -> str:
        if len(value.encode("utf-8", "surrogatepass")) > DNS1123_SUBDOMAIN_MAX_LENGTH:
            raise field_error(
                errors.too_long("", DNS1123_SUBDOMAIN_MAX_LENGTH).message, errors.TOO_LONG
            )
        return checked(value, dns1123_subdomain_errors(value))


class RunAffinityTermSerializer(StrictSerializer):
    labelSelector = LabelSelectorField(
        help_text="Selects the Runs (in the Run's namespace) this term is about; must not be empty.",
        allow_empty=False,
    )
    topologyKey = serializers.ChoiceField(
        help_text=(
            "The domain Runs are co-located in or kept apart from: kruntimes.io/runtime-pod, "
            "one Runtime Pod."
        ),
        choices=[TOPOLOGY_RUNTIME_POD],
    )


class WeightedRunAffinityTermSerializer(StrictSerializer):
    weight = StrictIntegerField(
        help_text="How much matching this term counts when choosing a Runtime Pod, 1 to 100.",
        min_value=MIN_WEIGHT,
        max_value=MAX_WEIGHT,
    )
    runAffinityTerm = RunAffinityTermSerializer(help_text="The term to match.")


class RunAffinityRulesSerializer(StrictSerializer):
    requiredDuringSchedulingIgnoredDuringExecution = BoundedListField(
        help_text=(
            "Terms (at most 32) that must all hold for a Runtime Pod to be chosen; not "
            "checked again once the Run is placed."
        ),
        child=RunAffinityTermSerializer(),
        max_items=MAX_AFFINITY_TERMS,
        required=False,
    )
    preferredDuringSchedulingIgnoredDuringExecution = BoundedListField(
        help_text=(
            "Weighted terms (at most 32) the scheduler prefers to satisfy; the Runtime Pod "
            "with the greatest sum of matching weights wins."
        ),
        child=WeightedRunAffinityTermSerializer(),
        max_items=MAX_AFFINITY_TERMS,
        required=False,
    )


class RunAffinitySerializer(StrictSerializer):
    """Run-to-Run placement: required/preferred terms over namespace-local Run labels."""

    runAffinity = RunAffinityRulesSerializer(
        help_text="Put the Run on a Runtime Pod that runs Runs matching these terms.",
        required=False,
    )
    runAntiAffinity = RunAffinityRulesSerializer(
        help_text="Keep the Run off Runtime Pods that run Runs matching these terms.",
        required=False,
    )
