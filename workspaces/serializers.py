"""PersistentWorkspace spec and status on the wire (seed 002, API.md)."""

from __future__ import annotations

from rest_framework import serializers

from portal.machinery.fields.bounded import INT32_MAX
from portal.machinery.fields.conditions import ConditionsField
from portal.machinery.fields.names import checked
from portal.machinery.fields.times import TimeField
from portal.machinery.serializers import (
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
)
from portal.machinery.validation import label_value_errors

from .models import CleanupPolicy, WorkspaceMode, WorkspacePhase

# The condition types the workspace controller keeps.
CONDITION_TYPES = ("PodReady", "Cleanup")


class PersistentWorkspaceSpecSerializer(StrictSerializer):
    runtime = StrictCharField(
        max_length=63, help_text="The Runtime whose Pods mount this workspace."
    )
    mode = serializers.ChoiceField(
        choices=WorkspaceMode.values,
        default=WorkspaceMode.RUNTIME_POD_LOCAL,
        help_text="How Runs share the workspace.",
    )
    ttlSecondsAfterUnused = StrictIntegerField(
        min_value=0,
        max_value=INT32_MAX,
        required=False,
        help_text="Seconds unused after which the workspace is cleaned up.",
    )
    cleanupPolicy = serializers.ChoiceField(
        choices=CleanupPolicy.values,
        default=CleanupPolicy.DELETE_AFTER_TTL,
        help_text="What happens to the data when the workspace is deleted or expires.",
    )

    def validate_runtime(self, value: str) -> str:
        return checked(value, label_value_errors(value))


class PersistentWorkspaceStatusSerializer(StrictSerializer):
    phase = serializers.ChoiceField(choices=WorkspacePhase.values, required=False)
    runtime = StrictCharField(max_length=63, required=False, allow_blank=True)
    boundPod = StrictCharField(max_length=253, required=False, allow_blank=True)
    boundPodUID = StrictCharField(max_length=36, required=False, allow_blank=True)
    path = StrictCharField(max_length=4096, required=False, allow_blank=True)
    lastUsedTime = TimeField(required=False)
    observedGeneration = StrictIntegerField(min_value=0, required=False)
    conditions = ConditionsField(required=False)
