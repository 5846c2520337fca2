"""Run.spec: source, mode, workspace, affinity, resources, env, timeout, retries, inputs."""

from __future__ import annotations

import re
from typing import Any

from portal.machinery import errors
from portal.machinery.errors import FieldError
from portal.machinery.fields.bounded import INT32_MAX, BoundedListField
from portal.machinery.fields.env import EnvVarSerializer, duplicate_name_causes
from portal.machinery.fields.names import checked
from portal.machinery.fields.paths import relative_path_errors
from portal.machinery.fields.times import DurationField
from portal.machinery.serializers import (
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    field_error,
    raise_causes,
)
from portal.machinery.validation import label_value_errors

from .affinity import RunAffinitySerializer, RunWorkspaceReferenceSerializer
from .common import RUNS_RESOURCE, ArtifactRefSerializer, ResourceListField, without_zero_requests

MAX_INLINE = 262144
MAX_PATH = 4096
MAX_ARGS, MAX_ARG_LENGTH = 256, 8192
MAX_ENV = 256
MAX_ARTIFACT_INPUTS = 32
_HANDLER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")


def _path_field(value: str, **kwargs) -> str:
    return checked(value, relative_path_errors(value, **kwargs))


class CodeSourceSerializer(StrictSerializer):
    inline = StrictCharField(
        max_length=MAX_INLINE,
        required=False,
        allow_blank=True,
        help_text="The program's source code itself, at most 256 KiB; exactly one of inline or repoURL.",
    )
    inlinePath = StrictCharField(
        max_length=MAX_PATH,
        required=False,
        help_text="The file name the inline source is written to (function mode needs it).",
    )
    repoURL = StrictCharField(
        max_length=2048,
        required=False,
        help_text="A Git repository to clone the source from; exactly one of inline or repoURL.",
    )
    commitSHA = StrictCharField(
        max_length=256,
        required=False,
        help_text="The commit of repoURL to check out (needs repoURL).",
    )

    def validate_inlinePath(self, value: str) -> str:
        return _path_field(value)

    def cross_field_causes(self, data: dict) -> list[FieldError]:
        causes = []
        if _has(data, "inline") == _has(data, "repoURL"):
            causes.append(
                errors.invalid("", "Invalid value: exactly one of inline or repoURL must be set")
            )
        if _has(data, "commitSHA") and not _has(data, "repoURL"):
            causes.append(errors.forbidden("commitSHA", "Forbidden: commitSHA requires repoURL"))
        return causes


class RunTaskModeSerializer(StrictSerializer):
    entrypoint = StrictCharField(
        help_text=(
            "The file the task starts, relative to the working directory; without inline "
            "source it must be a relative path the workspace holds."
        ),
        max_length=MAX_PATH,
        required=False,
        allow_blank=True,
    )
    args = BoundedListField(
        help_text=(
            "Arguments passed to the task (at most 256, each at most 8192 characters); "
            "without source and entrypoint the Runtime interprets them as the command."
        ),
        child=StrictCharField(max_length=MAX_ARG_LENGTH, allow_blank=True),
        max_items=MAX_ARGS,
        required=False,
    )


class RunFunctionModeSerializer(StrictSerializer):
    handler = StrictCharField(
        help_text="The function the Runtime calls, as module.function (dotted identifiers).",
        max_length=512,
        required=False,
    )
    idleTimeoutSeconds = StrictIntegerField(
        help_text="Seconds a Ready function Run may go without an invocation in flight or "
        "ended; then it ends Timeout with reason IdleTimeout and gives its slot back.",
        min_value=0,
        max_value=INT32_MAX,
        required=False,
    )

    def validate_handler(self, value: str) -> str:
        if not _HANDLER_RE.fullmatch(value):
            raise field_error(
                f'Invalid value: "{value}": must be "module.function" (dotted identifiers)'
            )
        return value


class RunModeSerializer(StrictSerializer):
    task = RunTaskModeSerializer(
        required=False, help_text="Run a program once: its entrypoint and arguments."
    )
    function = RunFunctionModeSerializer(
        required=False, help_text="Serve a handler (module.function) the runtime calls."
    )

    def cross_field_causes(self, data: dict) -> list[FieldError]:
        if _has(data, "task") == _has(data, "function"):
            return [
                errors.invalid("", "Invalid value: exactly one of task or function must be set")
            ]
        return []


class RetryPolicySerializer(StrictSerializer):
    maxAttempts = StrictIntegerField(
        help_text="How many attempts the Run gets in all, 1 to 100; 1 (no retry) when left out.",
        min_value=1,
        max_value=100,
        required=False,
    )
    backoff = DurationField(
        help_text="The wait before the first retry, a Go duration such as 10s (10s when left "
        "out); it doubles with each attempt, up to 60s.",
        required=False,
    )
    retryableReasons = BoundedListField(
        help_text="The failure reasons (at most 32) that are retried; when left out only "
        "infrastructure failures (the pod or its daemon went away) are. Cancellation and "
        "invalid outputs are never retried.",
        child=StrictCharField(max_length=128),
        max_items=32,
        required=False,
    )


class RunResourceRequirementsSerializer(StrictSerializer):
    """Zero quantities are dropped and ``runs`` falls back to 1: every Run takes a run slot."""

    requests = ResourceListField(
        help_text=(
            "Resource names and the quantities the Run takes from a Runtime Pod's capacity; "
            "zero quantities are dropped and runs is 1 unless given."
        ),
        integer_only=False,
        required=False,
    )

    def validate(self, attrs: dict) -> dict:
        return {**attrs, "requests": without_zero_requests(attrs.get("requests"))}


class ArtifactInputSerializer(StrictSerializer):
    ref = ArtifactRefSerializer(
        help_text="The artifact to copy, as another Run's status.artifactRefs names it."
    )
    path = StrictCharField(
        help_text="Where the artifact is placed, relative to the Run's working directory.",
        max_length=MAX_PATH,
    )

    def validate_path(self, value: str) -> str:
        return _path_field(value)


def _default_resources() -> dict:
    return {"requests": {RUNS_RESOURCE: 1}}


def _has(data: Any, key: str) -> bool:
    """Whether a raw JSON object sets ``key`` (``null`` counts as unset)."""
    return isinstance(data, dict) and data.get(key) is not None


def _object(data: Any, key: str) -> dict:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def _mode_source_errors(spec: dict) -> list[FieldError]:
    """The rules between mode and source (upstream's RunSpec XValidation rules), checked on
    the raw spec so they are reported with every other problem of the object. A Run may come
    without source: its Runtime interprets ``mode.task.args`` or runs an ``entrypoint`` its
    workspace already holds (runtimed.command)."""
    mode, source = _object(spec, "mode"), _object(spec, "source")
    inline, causes = _has(source, "inline"), []
    task = _object(mode, "task")
    entrypoint = task.get("entrypoint")
    if isinstance(entrypoint, str) and entrypoint and not inline:
        causes += [
            errors.invalid("mode.task.entrypoint", f'Invalid value: "{entrypoint}": {m}')
            for m in relative_path_errors(entrypoint, allow_dot_segments=True)
        ]
    if _has(source, "inlinePath") and not (_has(mode, "function") and inline):
        causes.append(
            errors.forbidden(
                "source.inlinePath", "Forbidden: only valid for function mode with inline source"
            )
        )
    if _has(mode, "function") and inline and not _has(source, "inlinePath"):
        causes.append(
            errors.required(
                "source.inlinePath",
                "Required value: function mode with inline source needs inlinePath",
            )
        )
    return causes


class RunSpecSerializer(StrictSerializer):
    """RunSpec is the desired state of a Run: the code, how it runs, and where."""

    runtime = StrictCharField(
        max_length=63,
        help_text="The name of the Runtime (in the Run's namespace) that runs this Run.",
    )
    source = CodeSourceSerializer(
        required=False,
        help_text="Where the code comes from: inline text or a Git repository. Optional: "
        "without it the Runtime runs mode.task.args, or an entrypoint its workspace holds.",
    )
    mode = RunModeSerializer(help_text="How the code runs: exactly one of task or function.")
    workspace = RunWorkspaceReferenceSerializer(
        required=False, help_text="A PersistentWorkspace of the namespace mounted for the Run."
    )
    affinity = RunAffinitySerializer(
        required=False,
        help_text="Run affinity and anti-affinity: which Runtime Pods the Run may share.",
    )
    resources = RunResourceRequirementsSerializer(
        default=_default_resources,
        help_text="What the Run takes from a Runtime Pod's capacity (runs: 1 at least).",
    )
    env = BoundedListField(
        child=EnvVarSerializer(),
        max_items=MAX_ENV,
        required=False,
        help_text="Environment variables of the Run's process (names unique).",
    )
    timeout = DurationField(
        positive=True,
        required=False,
        help_text="The longest the Run may run, a Go duration such as 30s or 5m.",
    )
    cancelRequested = StrictBooleanField(required=False, help_text="Set to true to cancel the Run.")
    retryPolicy = RetryPolicySerializer(
        required=False, help_text="How often and after how long a failed Run is tried again."
    )
    ttlSecondsAfterFinished = StrictIntegerField(
        min_value=0,
        max_value=INT32_MAX,
        required=False,
        help_text="Seconds after it finished that the Run is deleted.",
    )
    artifactInputs = BoundedListField(
        child=ArtifactInputSerializer(),
        max_items=MAX_ARTIFACT_INPUTS,
        required=False,
        help_text="Artifacts of other Runs copied into this Run's working directory.",
    )

    def validate_runtime(self, value: str) -> str:
        return checked(value, label_value_errors(value))

    def validate_env(self, value: list) -> list:
        raise_causes(duplicate_name_causes(value))
        return value

    def cross_field_causes(self, data: dict) -> list[FieldError]:
        return _mode_source_errors(data)
