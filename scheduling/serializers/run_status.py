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

    protocol = serializers.ChoiceField(choices=["HTTPS"])
    url = StrictCharField(max_length=2048)
    caBundle = StrictCharField(max_length=16384, required=False, allow_blank=True)


class RunStatusSerializer(StrictSerializer):
    phase = serializers.ChoiceField(choices=RunPhase.values, required=False)
    observedGeneration = StrictIntegerField(min_value=0, required=False)
    assignedPod = StrictCharField(max_length=253, required=False, allow_blank=True)
    # A pod UID is a UUID; the Run.assigned_pod_uid column holds 36 characters.
    assignedPodUID = StrictCharField(max_length=36, required=False, allow_blank=True)
    endpoint = RunEndpointSerializer(required=False)
    message = StrictCharField(max_length=MAX_MESSAGE, required=False, allow_blank=True)
    reason = StrictCharField(max_length=128, required=False, allow_blank=True)
    exitCode = StrictIntegerField(min_value=-INT32_MAX - 1, max_value=INT32_MAX, required=False)
    startTime = TimeField(required=False, allow_null=True)
    completionTime = TimeField(required=False, allow_null=True)
    outputs = BoundedMapField(max_properties=MAX_OUTPUTS, required=False)
    artifactRefs = BoundedListField(
        child=ArtifactRefSerializer(), max_items=MAX_ARTIFACT_REFS, required=False
    )
    artifactStore = ArtifactStoreSerializer(required=False)
    attempt = StrictIntegerField(min_value=1, max_value=INT32_MAX, required=False)
    conditions = ConditionsField(types=RUN_CONDITION_TYPES, required=False)

    def validate_reason(self, value: str) -> str:
        if value and not _REASON_RE.fullmatch(value):
            raise field_error(
                f"Invalid value: \"{value}\": must be CamelCase (e.g. 'OutputsInvalid')"
            )
        return value
