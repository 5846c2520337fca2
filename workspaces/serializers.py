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
    """PersistentWorkspaceSpec is the desired state of a workspace: a directory kept on one
    Runtime Pod across Runs."""

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
    """PersistentWorkspaceStatus is the observed state of a workspace, set by the server."""

    phase = serializers.ChoiceField(
        help_text=(
            "Pending (waiting for a ready Runtime Pod), Bound, Lost (its Pod is gone; never "
            "bound again) or Released (cleanup requested)."
        ),
        choices=WorkspacePhase.values,
        required=False,
    )
    runtime = StrictCharField(
        help_text="The Runtime the workspace was bound on.",
        max_length=63,
        required=False,
        allow_blank=True,
    )
    boundPod = StrictCharField(
        help_text="The Runtime Pod holding the workspace's directory.",
        max_length=253,
        required=False,
        allow_blank=True,
    )
    boundPodUID = StrictCharField(
        help_text="The uid of that Runtime Pod; a Pod of the same name with another uid is not it.",
        max_length=36,
        required=False,
        allow_blank=True,
    )
    path = StrictCharField(
        help_text="The workspace's directory on the Runtime Pod.",
        max_length=4096,
        required=False,
        allow_blank=True,
    )
    lastUsedTime = TimeField(
        help_text="When a Run last used the workspace; ttlSecondsAfterUnused counts from here.",
        required=False,
    )
    observedGeneration = StrictIntegerField(
        help_text="The metadata.generation this status was computed from.",
        min_value=0,
        required=False,
    )
    conditions = ConditionsField(required=False)
