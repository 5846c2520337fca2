"""Runtime spec and status: the Runtime Pod template, capacity, artifact store, workspace."""

from __future__ import annotations

import re
from typing import Any

from rest_framework import serializers

from portal.machinery import errors
from portal.machinery.errors import FieldError
from portal.machinery.fields.bounded import INT32_MAX
from portal.machinery.fields.conditions import ConditionsField
from portal.machinery.fields.quantities import QuantityField
from portal.machinery.serializers import (
    FreeformObjectField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    field_error,
    raise_causes,
)
from portal.machinery.validation import dns1123_subdomain_errors, invalid_value, type_invalid

from .common import ArtifactStoreSerializer, ResourceListField

RUNTIME_CONTAINER = "runtime"
MAX_IMAGE_LENGTH = 2048
DEFAULT_PORT = 9091
DEFAULT_RUNS_CAPACITY = 2  # applied by the scheduler when capacity.resources lacks "runs"

# corev1.VolumeSource: the sources a Runtime workspace may name (at most one).
VOLUME_SOURCES = (
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
)
_MEDIUM_RE = re.compile(r"|Memory|HugePages|HugePages-.+")


def _first_container_errors(container: Any) -> list[FieldError]:
    path = "spec.containers[0]"
    if not isinstance(container, dict):
        return [type_invalid(path, container, "object")]
    causes = []
    name = container.get("name")
    if name in (None, ""):
        causes.append(errors.required(f"{path}.name"))
    elif name != RUNTIME_CONTAINER:
        causes.append(
            invalid_value(
                f"{path}.name", name, f'the first container must be named "{RUNTIME_CONTAINER}"'
            )
        )
    image = container.get("image")
    if image in (None, ""):
        causes.append(errors.required(f"{path}.image"))
    elif not isinstance(image, str):
        causes.append(type_invalid(f"{path}.image", image, "string"))
    elif len(image) > MAX_IMAGE_LENGTH:
        causes.append(
            FieldError(
                f"{path}.image",
                errors.TOO_LONG,
                f"Too long: may not be more than {MAX_IMAGE_LENGTH} characters",
            )
        )
    return causes


def _pod_spec_errors(spec: dict) -> list[FieldError]:
    containers = spec.get("containers")
    if containers is not None and not isinstance(containers, list):
        causes = [type_invalid("spec.containers", containers, "array")]
    elif not containers:
        causes = [errors.required("spec.containers", "Required value: at least one container")]
    else:
        causes = _first_container_errors(containers[0])
    restart = spec.get("restartPolicy")
    if restart is not None and restart != "Always":
        causes.append(errors.not_supported("spec.restartPolicy", restart, ["Always"]))
    account = spec.get("serviceAccountName")
    if account is not None:
        if not isinstance(account, str):
            causes.append(type_invalid("spec.serviceAccountName", account, "string"))
        else:
            causes += [
                invalid_value("spec.serviceAccountName", account, m)
                for m in dns1123_subdomain_errors(account)
            ]
    if spec.get("ephemeralContainers"):
        causes.append(
            errors.forbidden("spec.ephemeralContainers", "Forbidden: not supported in a Deployment")
        )
    return causes


class PodTemplateField(FreeformObjectField):
    """corev1.PodTemplateSpec, free-form except for what the Runtime controller relies on."""

    def to_internal_value(self, data: Any) -> dict:
        data = super().to_internal_value(data)
        spec = data.get("spec")
        if spec is None:
            raise_causes([errors.required("spec")])
        if not isinstance(spec, dict):
            raise_causes([type_invalid("spec", spec, "object")])
        raise_causes(_pod_spec_errors(spec))
        return data


class RuntimeCapacitySerializer(StrictSerializer):
    resources = ResourceListField(
        help_text=(
            "Whole quantities of each resource a Runtime Pod offers its Runs, such as runs "
            "(how many at once; 2 when left out) or cpu; no fractions."
        ),
        integer_only=True,
        required=False,
    )


class EmptyDirSerializer(StrictSerializer):
    """An emptyDir volume: a directory that starts empty and lives as long as the Pod."""

    medium = StrictCharField(
        help_text='The storage medium: "" (the node\'s disk), Memory, HugePages or HugePages-<size>.',
        required=False,
        allow_blank=True,
    )
    sizeLimit = QuantityField(
        help_text="The most storage the emptyDir volume may use, a quantity such as 1Gi.",
        required=False,
    )

    def validate_medium(self, value: str) -> str:
        if not _MEDIUM_RE.fullmatch(value):
            raise field_error(
                f'Unsupported value: "{value}": supported values: "", "Memory", '
                '"HugePages", "HugePages-<size>"',
                errors.NOT_SUPPORTED,
            )
        return value


def _workspace_fields() -> dict[str, serializers.Field]:
    fields: dict[str, serializers.Field] = {
        name: FreeformObjectField(
            required=False,
            help_text=f"Use a {name} volume as the workspace, written as in a Pod's volumes "
            f"(corev1.VolumeSource {name}); at most one source may be set.",
        )
        for name in VOLUME_SOURCES
    }
    fields["emptyDir"] = EmptyDirSerializer(required=False)
    return fields


def _validate_workspace(self, attrs: dict) -> dict:
    chosen = [name for name in VOLUME_SOURCES if name in attrs]
    if len(chosen) > 1:
        raise_causes(
            [
                errors.forbidden(
                    "", f"Forbidden: at most one workspace volume source may be set, found {chosen}"
                )
            ]
        )
    return attrs


# corev1.VolumeSource inlined: workspace.persistentVolumeClaim, workspace.emptyDir.sizeLimit...
WorkspaceVolumeSourceSerializer = type(
    "WorkspaceVolumeSourceSerializer",
    (StrictSerializer,),
    {
        **_workspace_fields(),
        "validate": _validate_workspace,
        "__doc__": "Runtime.spec.workspace: an inlined corev1.VolumeSource, at most one source; "
        "none set means emptyDir.",
    },
)


def workspace_volume_source(spec: dict) -> dict:
    """The workspace volume a Runtime gets: its one source, or ``{"emptyDir": {}}``."""
    workspace = (spec or {}).get("workspace") or {}
    for name in VOLUME_SOURCES:
        if name in workspace:
            return {name: workspace[name]}
    return {"emptyDir": {}}


class RuntimeSpecSerializer(StrictSerializer):
    """RuntimeSpec is the desired state of a Runtime: its Pods, their capacity, and where
    artifacts and workspaces are kept."""

    template = PodTemplateField(
        help_text="The Pod template of the Runtime's Pods; its first container runs the Runs."
    )
    port = StrictIntegerField(
        min_value=1,
        max_value=65535,
        default=DEFAULT_PORT,
        help_text="The port the runtime daemon listens on inside each Pod.",
    )
    replicas = StrictIntegerField(
        min_value=1, max_value=INT32_MAX, default=1, help_text="How many Runtime Pods to keep."
    )
    daemonImage = StrictCharField(
        max_length=MAX_IMAGE_LENGTH,
        required=False,
        allow_blank=True,
        help_text="The image the runtime daemon comes from, if not the default.",
    )
    capacity = RuntimeCapacitySerializer(
        required=False, help_text="What each Runtime Pod offers Runs (resources such as runs, cpu)."
    )
    artifactStore = ArtifactStoreSerializer(
        required=False, help_text="Where the Runs' artifacts are kept: a filesystem volume or S3."
    )
    workspace = WorkspaceVolumeSourceSerializer(
        required=False, help_text="The volume source of the Pods' workspace directory."
    )


class RuntimeStatusSerializer(StrictSerializer):
    """RuntimeStatus is the observed state of a Runtime, set by the server."""

    readyReplicas = StrictIntegerField(
        help_text="How many of the Runtime's Pods are ready.",
        min_value=0,
        max_value=INT32_MAX,
        required=False,
    )
    observedGeneration = StrictIntegerField(
        help_text="The metadata.generation this status was computed from.",
        min_value=0,
        required=False,
    )
    conditions = ConditionsField(required=False)
