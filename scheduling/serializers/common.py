"""Shapes Runtime and Run share: ResourceLists, the artifact store configuration and
ArtifactRef."""

from __future__ import annotations

import re
from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError

from portal.machinery import errors
from portal.machinery.errors import FieldError
from portal.machinery.fields.times import TimeField
from portal.machinery.openapi.fields import INT_OR_STRING
from portal.machinery.quantities import parse_quantity, quantity_errors
from portal.machinery.serializers import (
    FreeformObjectField,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    field_error,
)
from portal.machinery.validation import invalid_value, qualified_name_errors
from runtimed.protocol import Problem, artifact_name_problem, location_path_problem

FILESYSTEM, S3 = "filesystem", "s3"
DRIVERS = (FILESYSTEM, S3)
ARTIFACT_TYPES = ("file", "directory", "archive", "blob")
RUNS_RESOURCE = "runs"
MIN_UPLOAD_PART_SIZE = 5 * 1024 * 1024
# --- ResourceList (quantities parsed by portal.machinery.quantities) ----------------------


class ResourceListField(FreeformObjectField):
    """corev1.ResourceList: qualified resource names -> non-negative quantities.

    ``integer_only`` (Runtime capacity) refuses fractions such as ``0.5`` or ``500m``; Run
    requests admit them and the scheduler fails such a Run with a clear reason.
    """

    def __init__(self, *, integer_only: bool, **kwargs: Any) -> None:
        self.integer_only = integer_only
        super().__init__(**kwargs)

    def openapi_schema(self) -> dict:
        return {"type": "object", "additionalProperties": INT_OR_STRING}

    def to_internal_value(self, data: Any) -> dict:
        data = super().to_internal_value(data)
        detail: dict = {}
        for name, value in data.items():
            messages = [invalid_value("", name, m).message for m in qualified_name_errors(name)]
            messages += [
                invalid_value("", value, m).message
                for m in quantity_errors(value, integer_only=self.integer_only)
            ]
            if messages:
                # reported at <path>.<resource name>
                detail[name] = [ErrorDetail(m, code=errors.INVALID) for m in messages]
        if detail:
            raise ValidationError(detail)
        return dict(data)


def without_zero_requests(requests: dict | None) -> dict:
    """Run requests as stored: zero quantities dropped, ``runs`` at least 1 (a Run with
    ``runs: 0`` would take no slot and so pass every pod's capacity)."""
    kept = {name: value for name, value in (requests or {}).items() if parse_quantity(value) != 0}
    kept.setdefault(RUNS_RESOURCE, 1)
    return kept


# --- the artifact store --------------------------------------------------------------------


class FilesystemArtifactStoreSerializer(StrictSerializer):
    volumeClaimName = StrictCharField(max_length=253)


class S3ArtifactStoreSerializer(StrictSerializer):
    bucket = StrictCharField()
    prefix = StrictCharField(max_length=1024, required=False, allow_blank=True)
    region = StrictCharField(max_length=128, required=False, allow_blank=True)
    endpoint = StrictCharField(max_length=2048, required=False, allow_blank=True)
    forcePathStyle = StrictBooleanField(required=False)
    credentialsSecretName = StrictCharField(max_length=253, required=False)
    uploadPartSize = StrictIntegerField(min_value=MIN_UPLOAD_PART_SIZE, required=False)
    uploadConcurrency = StrictIntegerField(min_value=1, max_value=2**31 - 1, required=False)

    def validate_bucket(self, value: str) -> str:
        if "/" in value:
            raise field_error(f'Invalid value: "{value}": must not contain "/"')
        return value


def driver_errors(driver: Any, attrs: dict, what: str) -> list[FieldError]:
    """Exactly one of ``filesystem`` / ``s3`` set, and it is the one ``driver`` names (an
    unknown driver is the driver field's own error)."""
    if driver not in DRIVERS:
        return []
    other = S3 if driver == FILESYSTEM else FILESYSTEM
    causes = []
    if attrs.get(driver) is None:
        causes.append(errors.required(driver, f'Required value: {what} for driver "{driver}"'))
    if attrs.get(other) is not None:
        causes.append(
            errors.forbidden(
                other,
                f'Forbidden: exactly one {what} must be set and it must match driver "{driver}"',
            )
        )
    return causes


class ArtifactStoreSerializer(StrictSerializer):
    """RuntimeArtifactStoreSpec: Runtime.spec.artifactStore and its Run.status snapshot."""

    driver = serializers.ChoiceField(choices=DRIVERS)
    filesystem = FilesystemArtifactStoreSerializer(required=False)
    s3 = S3ArtifactStoreSerializer(required=False)

    def cross_field_causes(self, data: dict) -> list[FieldError]:
        return driver_errors(data.get("driver"), data, "artifact store configuration")


# --- ArtifactRef ---------------------------------------------------------------------------

_DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")


def _problem_error(value: str, problem: Problem) -> ValidationError:
    if problem.too_long:
        return field_error(f"Too long: {problem.message}", errors.TOO_LONG)
    return field_error(f'Invalid value: "{value}": {problem.message}')


def _location_path(value: str) -> str:
    """Relative and inside the store's root once cleaned (the stores check again)."""
    problem = location_path_problem(value)
    if problem is not None:
        raise _problem_error(value, problem)
    return value


class FilesystemArtifactLocationSerializer(StrictSerializer):
    path = StrictCharField(max_length=4096)
    volumeClaimName = StrictCharField(max_length=253, required=False, allow_blank=True)

    def validate_path(self, value: str) -> str:
        return _location_path(value)


class S3ArtifactLocationSerializer(StrictSerializer):
    bucket = StrictCharField(max_length=255)
    key = StrictCharField(max_length=4096)

    def validate_key(self, value: str) -> str:
        return _location_path(value)


class ArtifactLocationSerializer(StrictSerializer):
    filesystem = FilesystemArtifactLocationSerializer(required=False)
    s3 = S3ArtifactLocationSerializer(required=False)


class ArtifactRefSerializer(StrictSerializer):
    """Compact coordinates of artifact content stored outside the database."""

    name = StrictCharField()
    driver = serializers.ChoiceField(choices=DRIVERS)
    type = serializers.ChoiceField(choices=ARTIFACT_TYPES)
    location = ArtifactLocationSerializer()
    sizeBytes = StrictIntegerField(min_value=0, required=False)
    digest = StrictCharField(required=False, allow_blank=True)
    contentType = StrictCharField(max_length=255, required=False, allow_blank=True)
    createdAt = TimeField(required=False)

    def validate_name(self, value: str) -> str:
        problem = artifact_name_problem(value)
        if problem is not None:
            raise _problem_error(value, problem)
        return value

    def validate_digest(self, value: str) -> str:
        if value and not _DIGEST_RE.fullmatch(value):
            raise field_error(
                f'Invalid value: "{value}": must be "sha256:" and 64 lowercase hexadecimal digits'
            )
        return value

    def cross_field_causes(self, data: dict) -> list[FieldError]:
        location = data.get("location")
        if not isinstance(location, dict):
            return []  # the location field itself says what is wrong
        causes = driver_errors(data.get("driver"), location, "artifact location")
        return [FieldError(f"location.{c.field}", c.reason, c.message) for c in causes]
