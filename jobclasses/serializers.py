"""JobClass, the parameter kinds and Job on the wire (seed 003, API.md).

Field rules (types, lengths, formats, enums, quantity syntax) are here and answer a 422 with
the field at fault. What needs other objects (does the parameters object exist, is the policy
self-consistent, is the namespace allowed) is the controllers' and shows as conditions.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

from portal.config_kinds import config_key_errors
from portal.machinery import errors
from portal.machinery.errors import FieldError
from portal.machinery.fields.bounded import INT32_MAX, BoundedListField, BoundedMapField
from portal.machinery.fields.conditions import ConditionsField
from portal.machinery.fields.env import EnvVarSerializer, duplicate_name_causes
from portal.machinery.fields.names import SubdomainField, checked
from portal.machinery.fields.paths import relative_path_errors
from portal.machinery.fields.quantities import QuantityField
from portal.machinery.fields.selectors import LabelSelectorField
from portal.machinery.fields.times import TimeField
from portal.machinery.serializers import (
    FreeformObjectField,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    field_error,
)
from portal.machinery.validation import dns1123_label_errors, dns1123_subdomain_errors

from . import quantities
from .models import JobPhase

MAX_STEPS, MAX_ENV, MAX_ARGS, MAX_FILES, MAX_PULL_SECRETS = 128, 256, 256, 256, 32
MAX_SCRIPT = 262144  # one step's run script
MAX_INLINE_BYTES = 1024 * 1024  # all inline source files together
MAX_MESSAGE = 4096
CONDITION_TYPES_CLASS = ("Accepted", "Ready")
CONDITION_TYPES_JOB = ("Accepted", "Scheduled", "Succeeded", "Failed", "ResultUnknown")
# GatewayClass' controllerName: a domain-prefixed path
_CONTROLLER_NAME = re.compile(
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
)
_KIND = re.compile(r"[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?")
_COMMIT_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# Kinds a parametersRef may never name: configuration is a typed parameters object
FORBIDDEN_PARAMETER_KINDS = ("ConfigMap", "Secret")


# --- resources ----------------------------------------------------------------------------


class CpuMemorySerializer(StrictSerializer):
    """A ResourceList of cpu and memory only (GPUs and disk come with a backend that needs them)."""

    cpu = QuantityField(
        help_text="CPU, a quantity such as 500m or 2.",
        rule=partial(quantities.resource_errors, "cpu"),
        required=False,
    )
    memory = QuantityField(
        help_text="Memory, a quantity such as 256Mi or 1Gi.",
        rule=partial(quantities.resource_errors, "memory"),
        required=False,
    )

    def unknown_field(self, key: str) -> ErrorDetail:
        return ErrorDetail(
            f'Unsupported value: "{key}": supported values: "cpu", "memory"',
            code=errors.NOT_SUPPORTED,
        )


class ResourceRequirementsSerializer(StrictSerializer):
    requests = CpuMemorySerializer(
        help_text="The least cpu and memory the Job needs to be placed.", required=False
    )
    limits = CpuMemorySerializer(
        help_text="The most cpu and memory the Job may use.", required=False
    )


class ExecutionResourcePolicySerializer(StrictSerializer):
    defaults = ResourceRequirementsSerializer(
        help_text="Requests and limits a Job of the class gets when it gives none.", required=False
    )
    minimum = ResourceRequirementsSerializer(
        help_text="The least a Job of the class may request or limit.", required=False
    )
    maximum = ResourceRequirementsSerializer(
        help_text="The most a Job of the class may request or limit.", required=False
    )


# --- JobClass -----------------------------------------------------------------------------


class ParametersReferenceSerializer(StrictSerializer):
    """One cluster-scoped parameters object of the class's controller (no namespace)."""

    group = StrictCharField(
        help_text="The API group of the parameters kind, a DNS subdomain.", max_length=253
    )
    kind = StrictCharField(
        help_text=(
            "The parameters kind, such as KubernetesExecutionParameters; never ConfigMap or Secret."
        ),
        max_length=63,
    )
    name = StrictCharField(
        help_text="The parameters object's name (cluster-scoped: no namespace).", max_length=253
    )

    def validate_group(self, value: str) -> str:
        return checked(value, dns1123_subdomain_errors(value))

    def validate_kind(self, value: str) -> str:
        if not _KIND.fullmatch(value):
            raise field_error(f'Invalid value: "{value}": must be a Kind name (e.g. "MyKind")')
        if value in FORBIDDEN_PARAMETER_KINDS:
            raise field_error(
                f'Unsupported value: "{value}": parametersRef names the controller\'s own '
                "parameters kind, never a ConfigMap or a Secret",
                errors.NOT_SUPPORTED,
            )
        return value

    def validate_name(self, value: str) -> str:
        return checked(value, dns1123_subdomain_errors(value))

    def unknown_field(self, key: str) -> ErrorDetail:
        if key == "namespace":
            return ErrorDetail(
                "Forbidden: v1alpha1 parametersRef references cluster-scoped objects only",
                code=errors.FORBIDDEN,
            )
        return super().unknown_field(key)


class JobClassSpecSerializer(StrictSerializer):
    """JobClassSpec names the controller that executes Jobs of the class, its parameters, and
    which namespaces and resources are allowed."""

    controllerName = StrictCharField(
        max_length=253, help_text="The controller that executes Jobs of this class."
    )
    parametersRef = ParametersReferenceSerializer(
        help_text="The execution parameters object (the backend's settings) of the class."
    )
    allowedNamespaces = LabelSelectorField(
        required=False, help_text="A label selector of the namespaces whose Jobs may use the class."
    )
    resources = ExecutionResourcePolicySerializer(
        required=False,
        help_text="The resources a Job of the class may ask for, and their defaults.",
    )

    def validate_controllerName(self, value: str) -> str:
        if not _CONTROLLER_NAME.fullmatch(value):
            raise field_error(
                f'Invalid value: "{value}": must be a domain-prefixed path '
                '(e.g. "execution.ayatori.ddupan.top/kubernetes")'
            )
        return value


class ObservedStatusSerializer(StrictSerializer):
    """The status of a JobClass or a parameters object: observedGeneration and conditions."""

    observedGeneration = StrictIntegerField(
        help_text="The metadata.generation this status was computed from; set by the server.",
        min_value=0,
        required=False,
    )
    conditions = ConditionsField(required=False)


class JobClassStatusSerializer(ObservedStatusSerializer):
    """JobClassStatus is the observed state of a JobClass (Accepted, Ready), set by its
    controller."""

    conditions = ConditionsField(required=False, types=CONDITION_TYPES_CLASS)


# --- parameter kinds ----------------------------------------------------------------------


class TolerationSerializer(StrictSerializer):
    key = StrictCharField(
        help_text=(
            "The taint key the toleration matches; empty matches every key (operator must "
            "then be Exists)."
        ),
        max_length=316,
        required=False,
        allow_blank=True,
    )
    operator = serializers.ChoiceField(
        help_text="Exists (any value) or Equal (the value must match; the default).",
        choices=["Exists", "Equal"],
        required=False,
    )
    value = StrictCharField(
        help_text="The taint value to match; empty when operator is Exists.",
        max_length=63,
        required=False,
        allow_blank=True,
    )
    effect = serializers.ChoiceField(
        help_text=(
            "The taint effect to match: NoSchedule, PreferNoSchedule or NoExecute; empty "
            "matches all."
        ),
        choices=["NoSchedule", "PreferNoSchedule", "NoExecute"],
        required=False,
    )
    tolerationSeconds = StrictIntegerField(
        help_text="For NoExecute, how long the Pod stays bound after the taint appears.",
        required=False,
    )

    def cross_field_causes(self, data: dict[str, Any]) -> list[FieldError]:
        if not isinstance(data, dict):
            return []
        causes = []
        if data.get("operator") == "Exists" and data.get("value"):
            causes.append(errors.invalid("value", "must be empty when `operator` is 'Exists'"))
        if not data.get("key") and data.get("operator", "Equal") != "Exists":
            causes.append(errors.invalid("operator", "must be 'Exists' when `key` is empty"))
        return causes


class SchedulingSerializer(StrictSerializer):
    nodeSelector = BoundedMapField(
        help_text="Node labels (at most 64) a Job's Pod's node must have.",
        max_properties=64,
        required=False,
    )
    tolerations = TolerationSerializer(
        help_text="Taints a Job's Pod tolerates.", many=True, required=False
    )


class SeccompProfileSerializer(StrictSerializer):
    type = serializers.ChoiceField(
        help_text="RuntimeDefault, Localhost or Unconfined.",
        choices=["RuntimeDefault", "Localhost", "Unconfined"],
    )
    localhostProfile = StrictCharField(
        help_text="The profile file on the node; only, and required, for type Localhost.",
        max_length=4096,
        required=False,
    )

    def cross_field_causes(self, data: dict[str, Any]) -> list[FieldError]:
        if not isinstance(data, dict):
            return []
        if data.get("type") == "Localhost" and not data.get("localhostProfile"):
            return [errors.required("localhostProfile", "must be set when type is Localhost")]
        if data.get("type") != "Localhost" and "localhostProfile" in data:
            return [errors.invalid("localhostProfile", "only for type Localhost")]
        return []


class PodSecurityContextSerializer(StrictSerializer):
    """The fields of corev1.PodSecurityContext an execution class sets."""

    runAsUser = StrictIntegerField(
        help_text="The user id the containers run as; not 0 when runAsNonRoot is true.",
        min_value=0,
        max_value=INT32_MAX,
        required=False,
    )
    runAsGroup = StrictIntegerField(
        help_text="The primary group id of the containers' processes.",
        min_value=0,
        max_value=INT32_MAX,
        required=False,
    )
    runAsNonRoot = StrictBooleanField(
        help_text="Refuse to start a container that would run as root.", required=False
    )
    fsGroup = StrictIntegerField(
        help_text="A group id that owns the Pod's volumes and is added to every process.",
        min_value=0,
        max_value=INT32_MAX,
        required=False,
    )
    fsGroupChangePolicy = serializers.ChoiceField(
        help_text="When volume ownership is changed: OnRootMismatch or Always.",
        choices=["OnRootMismatch", "Always"],
        required=False,
    )
    supplementalGroups = BoundedListField(
        help_text="More group ids (at most 64) given to every process.",
        max_items=64,
        child=StrictIntegerField(min_value=0, max_value=INT32_MAX),
        required=False,
    )
    seccompProfile = SeccompProfileSerializer(
        help_text="The seccomp profile of the containers.", required=False
    )

    def cross_field_causes(self, data: dict[str, Any]) -> list[FieldError]:
        if (
            isinstance(data, dict)
            and data.get("runAsNonRoot") is True
            and data.get("runAsUser") == 0
        ):
            return [errors.invalid("runAsUser", "must not be 0 when runAsNonRoot is true")]
        return []


class KubernetesExecutionParametersSpecSerializer(StrictSerializer):
    """How Jobs run as Kubernetes Pods: their service account, placement and security."""

    serviceAccountName = SubdomainField(
        help_text="The ServiceAccount the Job's Pods run as.", max_length=253, required=False
    )
    runtimeClassName = SubdomainField(
        help_text="The RuntimeClass of the Job's Pods.", max_length=253, required=False
    )
    scheduling = SchedulingSerializer(
        help_text="Where the Job's Pods may be placed.", required=False
    )
    podSecurityContext = PodSecurityContextSerializer(
        help_text="The security settings of the Job's Pods.", required=False
    )
    imagePullPolicy = serializers.ChoiceField(
        help_text="When images are pulled: Always, IfNotPresent or Never.",
        choices=["Always", "IfNotPresent", "Never"],
        required=False,
    )


class SecretKeySelectorSerializer(StrictSerializer):
    """A key of a namespaced Secret (the API key of an OpenSandbox endpoint)."""

    namespace = StrictCharField(help_text="The Secret's namespace.", max_length=63)
    name = SubdomainField(help_text="The Secret's name.", max_length=253)
    key = StrictCharField(help_text="The key in the Secret's data.", max_length=253)

    def validate_namespace(self, value: str) -> str:
        return checked(value, dns1123_label_errors(value))

    def validate_key(self, value: str) -> str:
        return checked(value, config_key_errors(value))


class OpenSandboxExecutionParametersSpecSerializer(StrictSerializer):
    """How Jobs run in an OpenSandbox service."""

    endpoint = StrictCharField(
        help_text=(
            "The OpenSandbox API URL: https (http only with allowInsecureHTTP), no "
            "credentials, query or fragment."
        ),
        max_length=2048,
    )
    apiKeySecretRef = SecretKeySelectorSerializer(
        help_text="The Secret key holding the OpenSandbox API key."
    )
    poolRef = StrictCharField(
        help_text="The OpenSandbox pool the sandboxes are created in (sent as extensions.poolRef).",
        max_length=253,
        required=False,
    )
    requestMapping = serializers.ChoiceField(
        help_text="How the Job's resources reach OpenSandbox: AdmissionOnly (the default) sends the "
        "limits only, Native the requests too.",
        choices=["AdmissionOnly", "Native"],
        default="AdmissionOnly",
    )
    allowSecretEnv = StrictBooleanField(
        help_text="Whether Jobs may take environment variables from Secrets (their values are then sent "
        "to OpenSandbox); false by default.",
        default=False,
    )
    allowImageAuth = StrictBooleanField(
        help_text="Whether Jobs may use imagePullSecrets (the credentials are then sent to OpenSandbox); "
        "false by default.",
        default=False,
    )
    allowInsecureHTTP = StrictBooleanField(
        help_text="Allow an http:// endpoint; only for an isolated development endpoint.",
        default=False,
    )

    def validate_poolRef(self, value: str) -> str:
        return checked(value, dns1123_subdomain_errors(value))

    def cross_field_causes(self, data: dict[str, Any]) -> list[FieldError]:
        endpoint = data.get("endpoint") if isinstance(data, dict) else None
        if not isinstance(endpoint, str) or not endpoint:
            return []
        return endpoint_causes(endpoint, data.get("allowInsecureHTTP") is True)


def endpoint_causes(endpoint: str, allow_insecure_http: bool) -> list[FieldError]:
    """An OpenSandbox endpoint: an HTTPS URL (HTTP only with allowInsecureHTTP) with a host and
    no credentials, query or fragment. The message never repeats a credential."""
    try:
        url = urlsplit(endpoint)
        url.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return [errors.invalid("endpoint", "must be an absolute URL")]
    if url.username is not None or url.password is not None or "@" in url.netloc:
        return [
            errors.invalid(
                "endpoint",
                "must not carry credentials: reference the API key with apiKeySecretRef",
            )
        ]
    if url.scheme not in ("https", "http") or not url.hostname:
        return [errors.invalid("endpoint", f'Invalid value: "{endpoint}": must be an https:// URL')]
    if url.scheme == "http" and not allow_insecure_http:
        return [
            errors.invalid(
                "endpoint",
                f'Invalid value: "{endpoint}": must use HTTPS (set allowInsecureHTTP: true only '
                "for an isolated development endpoint)",
            )
        ]
    if url.query or url.fragment:
        return [errors.invalid("endpoint", "must not have a query or a fragment")]
    return []


class LocalExecutionParametersSpecSerializer(StrictSerializer):
    """The local adapter: Jobs run as processes of the control-plane worker's machine."""

    workRoot = StrictCharField(
        help_text="The absolute directory the Jobs' checkouts are made under; <data dir>/jobs/<name> "
        "when left out.",
        max_length=4096,
        required=False,
    )
    maxConcurrentJobs = StrictIntegerField(
        help_text="How many Jobs run at once, 1 to 1024.", min_value=1, max_value=1024, default=4
    )

    def validate_workRoot(self, value: str) -> str:
        if not value.startswith("/"):
            raise field_error(f'Invalid value: "{value}": must be an absolute path')
        if ".." in value.split("/"):
            raise field_error(f"Invalid value: \"{value}\": must not contain a '..' segment")
        return value


# --- Job ----------------------------------------------------------------------------------


class StepSerializer(StrictSerializer):
    name = StrictCharField(
        help_text="The step's name, a DNS label unique within the Job.", max_length=63
    )
    run = StrictCharField(
        help_text="The shell script the step runs (at most 256 KiB).", max_length=MAX_SCRIPT
    )

    def validate_name(self, value: str) -> str:
        return checked(value, dns1123_label_errors(value))


class KeyRefSerializer(StrictSerializer):
    name = SubdomainField(help_text="The object's name in the Job's namespace.", max_length=253)
    key = StrictCharField(help_text="The key whose value is used.", max_length=253)
    optional = StrictBooleanField(
        help_text="If true, a missing object or key leaves the variable unset; otherwise the Job waits, "
        "naming what is missing. False by default.",
        default=False,
    )

    def validate_key(self, value: str) -> str:
        return checked(value, config_key_errors(value))


class EnvVarSourceSerializer(StrictSerializer):
    secretKeyRef = KeyRefSerializer(
        help_text="A key of a Secret; exactly one of secretKeyRef or configMapKeyRef.",
        required=False,
    )
    configMapKeyRef = KeyRefSerializer(
        help_text="A key of a ConfigMap; exactly one of secretKeyRef or configMapKeyRef.",
        required=False,
    )

    def cross_field_causes(self, data: dict[str, Any]) -> list[FieldError]:
        if not isinstance(data, dict):
            return []
        given = [k for k in ("secretKeyRef", "configMapKeyRef") if k in data]
        if len(given) != 1:
            return [
                errors.invalid("", "must specify exactly one of secretKeyRef or configMapKeyRef")
            ]
        return []


# A Job's env var: its value may come from a Secret or ConfigMap key, and its name is
# ``portable`` because the Kubernetes adapter hands every value to the pod through a Secret
# keyed by the variable's name (jobclasses.kubeexec.manifest), and a Secret key takes no spaces
# or other punctuation. (The class has no docstring: it would become the CRD's description.)
class JobEnvVarSerializer(EnvVarSerializer):
    portable_names = True

    name = StrictCharField(
        help_text=(
            'The variable\'s name: letters, digits, "_", "-" or ".", not starting with a '
            "digit; unique."
        ),
        max_length=253,
    )
    value = StrictCharField(
        help_text="The variable's value; not together with valueFrom.",
        max_length=32768,
        required=False,
        allow_blank=True,
    )
    valueFrom = EnvVarSourceSerializer(
        help_text="Take the value from a Secret or ConfigMap key; not together with value.",
        required=False,
    )

    def cross_field_causes(self, data: dict[str, Any]) -> list[FieldError]:
        if isinstance(data, dict) and "value" in data and "valueFrom" in data:
            return [errors.invalid("valueFrom", "may not be specified when `value` is not empty")]
        return []


class LocalObjectReferenceSerializer(StrictSerializer):
    name = SubdomainField(help_text="The name of an object in the same namespace.", max_length=253)


class SourceSerializer(StrictSerializer):
    """The checkout: inline files, or a repository at one commit."""

    inline = serializers.DictField(
        help_text=(
            "Files by relative path (at most 256, 1 MiB in all) written into the working "
            "directory; exactly one of inline or repoURL."
        ),
        child=StrictCharField(allow_blank=True),
        required=False,
    )
    repoURL = StrictCharField(
        help_text="A Git repository to check out; needs commitSHA.", max_length=2048, required=False
    )
    commitSHA = StrictCharField(
        help_text="The full lowercase hexadecimal commit of repoURL to check out.",
        max_length=64,
        required=False,
    )

    def validate_commitSHA(self, value: str) -> str:
        if not _COMMIT_SHA.fullmatch(value):
            raise field_error(
                f'Invalid value: "{value}": must be a full lowercase hexadecimal commit SHA'
            )
        return value

    def validate_inline(self, value: dict) -> dict:
        if len(value) > MAX_FILES:
            raise field_error(f"Too many: {len(value)}: must have at most {MAX_FILES} files")
        for path in sorted(value):
            messages = relative_path_errors(path) if path else ["must not be empty"]
            if messages:
                raise field_error(f'Invalid value: "{path}": a file path {messages[0]}')
        size = sum(len(content.encode("utf-8", "surrogatepass")) for content in value.values())
        if size > MAX_INLINE_BYTES:
            raise field_error(f"must be at most {MAX_INLINE_BYTES} bytes in all, got {size}")
        return value

    def cross_field_causes(self, data: dict[str, Any]) -> list[FieldError]:
        if not isinstance(data, dict):
            return []
        inline, repo, sha = "inline" in data, "repoURL" in data, "commitSHA" in data
        if inline == repo:
            return [errors.invalid("", "must specify exactly one of inline or repoURL")]
        if repo and not sha:
            return [errors.required("commitSHA", "required with repoURL")]
        if inline and sha:
            return [errors.invalid("commitSHA", "only with repoURL")]
        return []


class JobSpecSerializer(StrictSerializer):
    """JobSpec is what a Job runs (steps or a command, in an image), with what, and for how long."""

    jobClassName = SubdomainField(
        help_text="The JobClass that executes the Job. When left out: the class the namespace's "
        "execution.ayatori.ddupan.top/default-job-class annotation names, else the one class "
        "annotated as the default.",
        max_length=253,
        required=False,
    )
    image = StrictCharField(
        help_text="The container image the Job runs in.", max_length=4096, required=False
    )
    steps = BoundedListField(
        help_text="Named shell scripts run in order; exactly one of steps or command.",
        max_items=MAX_STEPS,
        child=StepSerializer(),
        required=False,
    )
    command = BoundedListField(
        help_text="The program and its arguments to run; exactly one of steps or command.",
        max_items=MAX_ARGS,
        child=StrictCharField(),
        required=False,
    )
    args = BoundedListField(
        help_text="Arguments added to command (only with command).",
        max_items=MAX_ARGS,
        child=StrictCharField(allow_blank=True),
        required=False,
    )
    workingDir = StrictCharField(
        help_text="The working directory, relative to the checkout.",
        max_length=4096,
        required=False,
    )
    source = SourceSerializer(help_text="The code checked out before the Job runs.", required=False)
    env = BoundedListField(
        help_text="Environment variables of the Job (at most 256, names unique).",
        max_items=MAX_ENV,
        child=JobEnvVarSerializer(),
        required=False,
    )
    imagePullSecrets = BoundedListField(
        help_text="Secrets (at most 32) used to pull the image.",
        max_items=MAX_PULL_SECRETS,
        child=LocalObjectReferenceSerializer(),
        required=False,
    )
    resources = ResourceRequirementsSerializer(
        help_text=(
            "The cpu and memory the Job requests and is limited to; the class's policy fills "
            "in and bounds them."
        ),
        required=False,
    )
    timeoutSeconds = StrictIntegerField(
        help_text="The longest the Job may run, in seconds.",
        min_value=1,
        max_value=INT32_MAX,
        required=False,
    )
    cancelRequested = StrictBooleanField(help_text="Set to true to cancel the Job.", required=False)

    def validate_image(self, value: str) -> str:
        if not value or value != value.strip():
            raise field_error(f'Invalid value: "{value}": must be a non-empty image reference')
        return value

    def validate_workingDir(self, value: str) -> str:
        return checked(value, relative_path_errors(value) if value else ["must not be empty"])

    def cross_field_causes(self, data: dict[str, Any]) -> list[FieldError]:
        if not isinstance(data, dict):
            return []
        causes: list[FieldError] = []
        has_steps, has_command = "steps" in data, "command" in data
        if has_steps == has_command:
            causes.append(errors.invalid("steps", "must specify exactly one of steps or command"))
        elif has_steps and isinstance(data["steps"], list):
            if not data["steps"]:
                causes.append(errors.required("steps", "must have at least 1 item"))
            seen: set[str] = set()
            for index, step in enumerate(data["steps"]):
                name = step.get("name") if isinstance(step, dict) else None
                if isinstance(name, str) and name in seen:
                    causes.append(errors.duplicate(f"steps[{index}].name", name))
                if isinstance(name, str):
                    seen.add(name)
        if "args" in data and not has_command:
            causes.append(errors.invalid("args", "only with command"))
        if has_command and isinstance(data["command"], list) and not data["command"]:
            causes.append(errors.required("command", "must have at least 1 item"))
        return causes + duplicate_name_causes(data.get("env"), "env")


class ResolvedParametersRefSerializer(StrictSerializer):
    group = StrictCharField(help_text="The parameters kind's API group.", max_length=253)
    kind = StrictCharField(help_text="The parameters kind.", max_length=63)
    name = StrictCharField(help_text="The parameters object's name.", max_length=253)
    uid = StrictCharField(
        help_text="The parameters object's uid when the Job was admitted.",
        max_length=36,
        required=False,
        allow_blank=True,
    )


class ResolvedJobClassSerializer(StrictSerializer):
    name = StrictCharField(help_text="The JobClass's name.", max_length=253)
    uid = StrictCharField(help_text="The JobClass's uid.", max_length=36)
    controllerName = StrictCharField(
        help_text="The controller that executes the Job.", max_length=253
    )
    parametersRef = ResolvedParametersRefSerializer(help_text="The class's parameters object.")


class StepStatusSerializer(StrictSerializer):
    name = StrictCharField(help_text="The step's name.", max_length=63)
    status = serializers.ChoiceField(
        help_text="Pending, Running, Succeeded, Failed, Skipped or Cancelled.",
        choices=["Pending", "Running", "Succeeded", "Failed", "Skipped", "Cancelled"],
    )
    exitCode = StrictIntegerField(
        help_text="The step's exit code once it ended.", required=False, allow_null=True
    )
    startedAt = TimeField(help_text="When the step started.", required=False, allow_null=True)
    finishedAt = TimeField(help_text="When the step finished.", required=False, allow_null=True)


class JobStatusSerializer(StrictSerializer):
    """JobStatus is the observed state of a Job, set by the server and the class's controller."""

    phase = serializers.ChoiceField(
        help_text="Where the Job is in its life: Pending, Scheduled, Running, Succeeded, Failed or Unknown "
        "(its result cannot be observed safely; it is never re-run elsewhere).",
        choices=JobPhase.values,
        required=False,
    )
    message = StrictCharField(
        help_text="A human-readable account of the Job's state.",
        max_length=MAX_MESSAGE,
        required=False,
        allow_blank=True,
    )
    resolvedJobClass = ResolvedJobClassSerializer(
        help_text="The JobClass the Job was admitted to, fixed at admission.", required=False
    )
    effectiveResources = ResourceRequirementsSerializer(
        help_text=(
            "The requests and limits the Job runs with, after the class's defaults and bounds."
        ),
        required=False,
    )
    executionRef = FreeformObjectField(
        help_text="The backend's own reference to the running Job (a Pod, a sandbox, a process).",
        required=False,
    )
    steps = BoundedListField(
        help_text="The state of each step.",
        max_items=MAX_STEPS + 1,
        child=StepStatusSerializer(),
        required=False,
    )
    startTime = TimeField(help_text="When the Job started.", required=False)
    completionTime = TimeField(help_text="When the Job finished.", required=False)
    observedGeneration = StrictIntegerField(
        help_text="The metadata.generation this status was computed from.",
        min_value=0,
        required=False,
    )
    conditions = ConditionsField(required=False, types=CONDITION_TYPES_JOB)
