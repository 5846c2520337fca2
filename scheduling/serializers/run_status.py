"""Run.status: what the scheduler, runtimed and the controllers report about a Run."""

from __future__ import annotations

import re

from rest_framework import serializers

from portal.machinery.fields.bounded import INT32_MAX, BoundedListField, BoundedMapField
from portal.machinery.fields.conditions import ConditionsField
from portal.machinery.fields.times import TimeField
from portal.machinery.serializers import (
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    field_error,
)

from ..models import RunPhase
from .common import ArtifactRefSerializer, ArtifactStoreSerializer

RUN_CONDITION_TYPES = ("Scheduled", "Running", "Ready", "Completed")
MAX_OUTPUTS = 64
MAX_ARTIFACT_REFS = 32
MAX_MESSAGE = 4096
_REASON_RE = re.compile(r"[A-Z][A-Za-z0-9]*")


class RunEndpointSerializer(StrictSerializer):
    """Where a Ready function Run is invoked; only HTTPS endpoints are published."""

    protocol = serializers.ChoiceField(help_text="Always HTTPS.", choices=["HTTPS"])
    url = StrictCharField(help_text="The URL the function is invoked at.", max_length=2048)
    caBundle = StrictCharField(
        help_text=(
            "PEM certificates that verify the endpoint's TLS certificate, when it is not "
            "publicly trusted."
        ),
        max_length=16384,
        required=False,
        allow_blank=True,
    )


class RunStatusSerializer(StrictSerializer):
    """RunStatus is the observed state of a Run, set by the server: the scheduler, the runtime
    daemon and the controllers."""

    phase = serializers.ChoiceField(
        help_text=(
            "Where the Run is in its life: Pending, Scheduled, Running, Ready (a function "
            "serving), Succeeded, Failed, Timeout or Cancelled."
        ),
        choices=RunPhase.values,
        required=False,
    )
    observedGeneration = StrictIntegerField(
        help_text="The metadata.generation this status was computed from.",
        min_value=0,
        required=False,
    )
    assignedPod = StrictCharField(
        help_text="The Runtime Pod the scheduler placed the Run on.",
        max_length=253,
        required=False,
        allow_blank=True,
    )
    # A pod UID is a UUID; the Run.assigned_pod_uid column holds 36 characters.
    assignedPodUID = StrictCharField(
        help_text="The uid of that Runtime Pod.", max_length=36, required=False, allow_blank=True
    )
    endpoint = RunEndpointSerializer(
        help_text="Where a Ready function Run is invoked.", required=False
    )
    message = StrictCharField(
        help_text="A human-readable account of the Run's state.",
        max_length=MAX_MESSAGE,
        required=False,
        allow_blank=True,
    )
    reason = StrictCharField(
        help_text="A CamelCase word saying why the Run is in its phase (such as OutputsInvalid).",
        max_length=128,
        required=False,
        allow_blank=True,
    )
    exitCode = StrictIntegerField(
        help_text="The exit code of the Run's process once it ended.",
        min_value=-INT32_MAX - 1,
        max_value=INT32_MAX,
        required=False,
    )
    startTime = TimeField(
        help_text="When the Run started running.", required=False, allow_null=True
    )
    completionTime = TimeField(help_text="When the Run finished.", required=False, allow_null=True)
    outputs = BoundedMapField(
        help_text="The values the Run reported as outputs (at most 64), by name.",
        max_properties=MAX_OUTPUTS,
        required=False,
    )
    artifactRefs = BoundedListField(
        help_text="The artifacts the Run stored (at most 32).",
        child=ArtifactRefSerializer(),
        max_items=MAX_ARTIFACT_REFS,
        required=False,
    )
    artifactStore = ArtifactStoreSerializer(
        help_text=(
            "The Runtime's artifact store as it was when the Run ran, so its artifacts can be"
            " found later."
        ),
        required=False,
    )
    attempt = StrictIntegerField(
        help_text="Which attempt this is, counting from 1.",
        min_value=1,
        max_value=INT32_MAX,
        required=False,
    )
    conditions = ConditionsField(types=RUN_CONDITION_TYPES, required=False)

    def validate_reason(self, value: str) -> str:
        if value and not _REASON_RE.fullmatch(value):
            raise field_error(
                f"Invalid value: \"{value}\": must be CamelCase (e.g. 'OutputsInvalid')"
            )
        return value
