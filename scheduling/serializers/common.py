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
    volumeClaimName = StrictCharField(
        help_text=(
            "The PersistentVolumeClaim (at most 253 characters) whose volume holds the artifacts."
        ),
        max_length=253,
    )


class S3ArtifactStoreSerializer(StrictSerializer):
    bucket = StrictCharField(
        help_text='The S3 bucket artifacts are written to; may not contain "/".'
    )
    prefix = StrictCharField(
        help_text="A key prefix (at most 1024 characters) put before every artifact's key.",
        max_length=1024,
        required=False,
        allow_blank=True,
    )
    region = StrictCharField(
        help_text="The bucket's region; empty lets the client pick its default.",
        max_length=128,
        required=False,
        allow_blank=True,
    )
    endpoint = StrictCharField(
        help_text="The S3 API endpoint URL, for S3-compatible stores; empty is AWS S3.",
        max_length=2048,
        required=False,
        allow_blank=True,
    )
    forcePathStyle = StrictBooleanField(
        help_text=(
            "Address the bucket in the URL path instead of the host name (needed by many "
            "S3-compatible stores)."
        ),
        required=False,
    )
    credentialsSecretName = StrictCharField(
        help_text="The Secret in the Runtime's namespace holding the S3 access credentials.",
        max_length=253,
        required=False,
    )
    uploadPartSize = StrictIntegerField(
        help_text="The size in bytes of each part of a multipart upload; at least 5 MiB.",
        min_value=MIN_UPLOAD_PART_SIZE,
        required=False,
    )
    uploadConcurrency = StrictIntegerField(
        help_text="How many parts of one upload are sent at once; at least 1.",
        min_value=1,
        max_value=2**31 - 1,
        required=False,
    )

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

    driver = serializers.ChoiceField(
        help_text=(
            "Which store keeps artifacts: filesystem or s3; the field of the same name must "
            "be set, and only it."
        ),
        choices=DRIVERS,
    )
    filesystem = FilesystemArtifactStoreSerializer(
        help_text="The filesystem store; required when driver is filesystem.", required=False
    )
    s3 = S3ArtifactStoreSerializer(
        help_text="The S3 store; required when driver is s3.", required=False
    )

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
    path = StrictCharField(
        help_text="The artifact's path relative to the store's root; must stay inside it.",
        max_length=4096,
    )
    volumeClaimName = StrictCharField(
        help_text="The PersistentVolumeClaim the artifact was written to.",
        max_length=253,
        required=False,
        allow_blank=True,
    )

    def validate_path(self, value: str) -> str:
        return _location_path(value)


class S3ArtifactLocationSerializer(StrictSerializer):
    bucket = StrictCharField(help_text="The bucket holding the artifact.", max_length=255)
    key = StrictCharField(
        help_text="The artifact's object key; relative, and must stay inside the store's prefix.",
        max_length=4096,
    )

    def validate_key(self, value: str) -> str:
        return _location_path(value)


class ArtifactLocationSerializer(StrictSerializer):
    filesystem = FilesystemArtifactLocationSerializer(
        help_text="Where the artifact lies on a filesystem store; set when driver is filesystem.",
        required=False,
    )
    s3 = S3ArtifactLocationSerializer(
        help_text="Where the artifact lies in S3; set when driver is s3.", required=False
    )


class ArtifactRefSerializer(StrictSerializer):
    """Compact coordinates of artifact content stored outside the database."""

    name = StrictCharField(help_text="The artifact's name, unique among one Run's artifacts.")
    driver = serializers.ChoiceField(
        help_text=(
            "The store the artifact is kept in: filesystem or s3 (it names the location field"
            " that is set)."
        ),
        choices=DRIVERS,
    )
    type = serializers.ChoiceField(
        help_text="What the content is: file, directory, archive or blob.", choices=ARTIFACT_TYPES
    )
    location = ArtifactLocationSerializer(
        help_text="Where the content is stored; exactly the field named by driver is set."
    )
    sizeBytes = StrictIntegerField(
        help_text="The content's size in bytes.", min_value=0, required=False
    )
    digest = StrictCharField(
        help_text='The content\'s SHA-256 digest, "sha256:" and 64 lowercase hexadecimal digits.',
        required=False,
        allow_blank=True,
    )
    contentType = StrictCharField(
        help_text="The content's media type, such as application/gzip.",
        max_length=255,
        required=False,
        allow_blank=True,
    )
    createdAt = TimeField(help_text="When the artifact was stored.", required=False)

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
