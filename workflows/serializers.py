"""Workflow, WorkflowRun and Action bodies on the wire (API.md; upstream's
``api/v1alpha1/{workflow,workflowrun,action}_types.go``, step ``artifacts`` and job status
``artifacts`` from seed 002).

The field rules (types, lengths, patterns, item and property counts) are here; the rules
between jobs, steps and expressions are ``workflows.validators``, run from the specs'
``cross_field_causes`` so every problem of a manifest is reported at once.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError

from portal.machinery import errors
from portal.machinery.errors import FieldError
from portal.machinery.fields.bounded import BoundedListField, BoundedMapField
from portal.machinery.fields.conditions import ConditionsField
from portal.machinery.fields.env import env_var_name_errors
from portal.machinery.fields.names import LabelValueField, SubdomainField, checked, name_errors
from portal.machinery.fields.paths import relative_path_errors
from portal.machinery.serializers import (
    NON_FIELD,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    field_error,
)
from runtimed.protocol import artifact_name_problem
from scheduling.serializers import ArtifactRefSerializer

from . import validators
from .models import JobPhase, StepPhase, WorkflowRunPhase

MAX_INPUTS = MAX_OUTPUTS = 64
MAX_VALUE = 8192  # an input default, an output expression, an argument
MAX_JOBS, MAX_NEEDS, MAX_STEPS, MAX_WITH, MAX_ARGS, MAX_ENV = 64, 64, 128, 256, 256, 256
MAX_RUN = 262144  # Run.spec.source.inline
MAX_ARTIFACTS = 32  # Run.spec.artifactInputs
MAX_MESSAGE = 4096
MAX_PRE, MAX_JOB_NAME = 64, 63  # status.jobs.<job>.pre (kruntimes' JobStatus.Pre)
MAX_SNAPSHOT_NAME = 253


class NamedMapField(serializers.DictField):
    """A JSON object of named entries: at least ``min_properties`` and at most
    ``max_properties`` of them, each key checked by ``key_errors`` (reported at the map)."""

    def __init__(
        self, *, max_properties: int, min_properties: int = 0, key_errors=None, **kwargs: Any
    ) -> None:
        self.max_properties, self.min_properties = max_properties, min_properties
        self.key_errors = key_errors
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> dict:
        if not isinstance(data, dict):
            self.fail("not_a_dict", input_type=type(data).__name__)
        if len(data) > self.max_properties:
            raise field_error(
                f"Too many: {len(data)}: must have at most {self.max_properties} properties",
                errors.TOO_MANY,
            )
        if len(data) < self.min_properties:
            raise field_error(
                f"Required value: must have at least {self.min_properties} entry", errors.REQUIRED
            )
        detail: dict = {}
        value: dict = {}
        try:
            value = super().to_internal_value(data)
        except ValidationError as exc:
            detail = dict(exc.detail) if isinstance(exc.detail, dict) else {NON_FIELD: exc.detail}
        bad = [
            ErrorDetail(f'Invalid value: "{key}": {message}', code=errors.INVALID)
            for key in data
            for message in (self.key_errors(key) if self.key_errors else [])
        ]
        if bad:
            detail[NON_FIELD] = [*detail.get(NON_FIELD, []), *bad]
        if detail:
            raise ValidationError(detail)
        return value


class InputSpecSerializer(StrictSerializer):
    type = serializers.ChoiceField(
        help_text="The input's type; only string.", choices=["string"], default="string"
    )
    required = StrictBooleanField(help_text="Whether a caller must pass the input.", required=False)
    default = StrictCharField(
        help_text="The value used when the caller passes none (at most 8192 characters).",
        max_length=MAX_VALUE,
        required=False,
        allow_blank=True,
    )


class OutputSpecSerializer(StrictSerializer):
    value = StrictCharField(
        help_text=(
            "An expression (at most 8192 characters) whose value the output takes, such as "
            "${{ jobs.build.outputs.version }}."
        ),
        max_length=MAX_VALUE,
    )


class StepArtifactSerializer(StrictSerializer):
    """An artifact of a job this step's job needs, staged at ``path`` before the step runs."""

    # "from" is a Python keyword: declared in get_fields
    path = StrictCharField(
        help_text="Where the artifact is staged, relative to the step's working directory.",
        max_length=4096,
    )

    def get_fields(self) -> dict:
        return {
            "from": ArtifactSourceField(
                help_text="The artifact to stage: jobs.<job>.artifacts.<artifact name>, of a job "
                "this step's job needs."
            ),
            **super().get_fields(),
        }

    def validate_path(self, value: str) -> str:
        return checked(value, relative_path_errors(value))


class ArtifactSourceField(StrictCharField):
    """``jobs.<job>.artifacts.<artifact name>``."""

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        found = validators.ARTIFACT_FROM.fullmatch(value)
        problem = artifact_name_problem(found.group("name")) if found else None
        if found is None or problem is not None:
            why = problem.message if problem else "must be jobs.<job>.artifacts.<artifact name>"
            raise field_error(f'Invalid value: "{value}": {why}')
        return value


def inputs_field() -> NamedMapField:
    return NamedMapField(
        max_properties=MAX_INPUTS,
        child=InputSpecSerializer(),
        required=False,
        help_text="The inputs callers may pass (at most 64), by name; expressions read them as "
        "inputs.<name>.",
    )


def outputs_field() -> NamedMapField:
    return NamedMapField(
        max_properties=MAX_OUTPUTS,
        child=OutputSpecSerializer(),
        required=False,
        help_text="The outputs it publishes (at most 64), by name, each an expression over the "
        "jobs' or steps' outputs.",
    )


def string_map(max_properties: int, **kwargs: Any) -> BoundedMapField:
    return BoundedMapField(max_properties=max_properties, required=False, **kwargs)


class StepSpecSerializer(StrictSerializer):
    name = LabelValueField(help_text="The step's name, a label value, unique within its job.")
    run = StrictCharField(
        help_text="A script the step runs (at most 256 KiB); exactly one of run or uses.",
        max_length=MAX_RUN,
        required=False,
    )
    uses = SubdomainField(
        help_text="The Action (in the namespace) the step runs; exactly one of run or uses.",
        max_length=253,
        required=False,
    )
    # "with" is a Python keyword: declared in get_fields
    args = BoundedListField(
        help_text="Arguments passed to the step's run script (at most 256); run steps only.",
        child=StrictCharField(max_length=MAX_VALUE, allow_blank=True),
        max_items=MAX_ARGS,
        required=False,
    )
    env = NamedMapField(
        help_text="Environment variables of the step's run script (at most 256), by name; run steps "
        "only.",
        max_properties=MAX_ENV,
        child=StrictCharField(allow_blank=True),
        key_errors=env_var_name_errors,
        required=False,
    )
    artifacts = BoundedListField(
        help_text="Artifacts of needed jobs staged before the step runs (at most 32).",
        child=StepArtifactSerializer(),
        max_items=MAX_ARTIFACTS,
        required=False,
    )

    def get_fields(self) -> dict:
        return {
            **super().get_fields(),
            "with": string_map(
                MAX_WITH, help_text="Inputs passed to the Action the step uses (at most 256)."
            ),
        }

    def cross_field_causes(self, data: dict) -> list[FieldError]:
        return validators.step_shape_causes(data)


class JobSpecSerializer(StrictSerializer):
    # "runs-on" is no Python name: declared in get_fields
    needs = BoundedListField(
        help_text="The jobs (at most 64) that must succeed before this one starts.",
        child=StrictCharField(max_length=63),
        max_items=MAX_NEEDS,
        required=False,
    )
    steps = BoundedListField(
        help_text="The steps the job runs in order (1 to 128); not together with uses.",
        child=StepSpecSerializer(),
        max_items=MAX_STEPS,
        min_length=1,
        required=False,
    )
    uses = SubdomainField(
        help_text=(
            "A Workflow (in the namespace) the job runs as a child WorkflowRun; not together "
            "with steps."
        ),
        max_length=253,
        required=False,
    )
    outputs = string_map(
        help_text=(
            "The job's outputs (at most 64), by name, each an expression over its steps' outputs."
        ),
        max_properties=MAX_OUTPUTS,
    )

    def get_fields(self) -> dict:
        return {
            "runs-on": LabelValueField(
                required=False, help_text="The Runtime (in the namespace) the job's steps run on."
            ),
            **super().get_fields(),
            "with": string_map(
                MAX_WITH,
                help_text="Inputs passed to the Workflow the job uses (at most 256), by name.",
            ),
        }

    def cross_field_causes(self, data: dict) -> list[FieldError]:
        return validators.job_shape_causes(data)


def jobs_field(**kwargs: Any) -> NamedMapField:
    return NamedMapField(
        max_properties=MAX_JOBS,
        min_properties=1,
        child=JobSpecSerializer(),
        key_errors=name_errors,
        help_text="The jobs (1 to 64), by name (a DNS label); jobs run once the jobs they need "
        "have succeeded.",
        **kwargs,
    )


class WorkflowSpecSerializer(StrictSerializer):
    """WorkflowSpec is a reusable definition of jobs, their inputs and outputs."""

    inputs = inputs_field()
    outputs = outputs_field()
    jobs = jobs_field()

    def cross_field_causes(self, data: dict) -> list[FieldError]:
        return validators.workflow_causes(data, inputs=validators.keys(data.get("inputs")))


class DefinitionStatusSerializer(StrictSerializer):
    """Workflow.status and Action.status: definition-level conditions (Ready)."""

    observedGeneration = StrictIntegerField(
        help_text="The metadata.generation this status was computed from.",
        min_value=0,
        required=False,
    )
    conditions = ConditionsField(required=False)


class ActionSpecSerializer(StrictSerializer):
    """ActionSpec is a reusable sequence of steps a workflow step can use."""

    inputs = inputs_field()
    outputs = outputs_field()
    steps = BoundedListField(
        help_text="The steps the Action runs in order (1 to 128).",
        child=StepSpecSerializer(),
        max_items=MAX_STEPS,
        min_length=1,
    )

    def cross_field_causes(self, data: dict) -> list[FieldError]:
        return validators.action_causes(data)


class WorkflowRefSerializer(StrictSerializer):
    name = SubdomainField(
        help_text="The Workflow's name in the WorkflowRun's namespace.", max_length=253
    )


class RerunOfSerializer(StrictSerializer):
    """The finished WorkflowRun this one runs again (``workflows.reruns``)."""

    name = SubdomainField(
        help_text=(
            "The WorkflowRun (in this WorkflowRun's namespace) run again: it must exist, be "
            "finished, and be readable by the creator; its jobs, outputs, workflowRef and "
            "inputs are copied into this spec at create."
        ),
        max_length=253,
    )
    failedJobsOnly = StrictBooleanField(
        help_text=(
            "Run only the jobs that did not succeed and those downstream of them; the jobs "
            "that succeeded keep their outputs, artifacts and step Runs from that run. "
            "Default false: every job runs again."
        ),
        required=False,
        default=False,
    )
    uid = StrictCharField(
        help_text=(
            "The uid of the WorkflowRun run again, set at create; when given, a precondition "
            "that the named WorkflowRun still has it."
        ),
        max_length=36,
        required=False,
    )


class WorkflowRunSpecSerializer(StrictSerializer):
    """A run of frozen jobs: given inline, or copied from ``workflowRef`` at create
    (``workflows.starting``); ``inputs`` are the values its expressions read."""

    workflowRef = WorkflowRefSerializer(
        help_text=(
            "The Workflow whose jobs, inputs and outputs are copied into this spec when the "
            "WorkflowRun is created."
        ),
        required=False,
    )
    inputs = string_map(
        MAX_INPUTS,
        help_text="The input values (at most 64), by name, that the expressions read.",
        child=StrictCharField(max_length=MAX_VALUE, allow_blank=True),
    )
    outputs = outputs_field()
    jobs = jobs_field()
    cancelRequested = StrictBooleanField(
        help_text="Set to true to cancel the WorkflowRun and the Runs it started.", required=False
    )
    rerunOf = RerunOfSerializer(
        help_text=(
            "The finished WorkflowRun this one reruns: its jobs, outputs and inputs are copied "
            "(inputs may be overridden unless failedJobsOnly), and the label "
            "kruntimes.io/rerun-of names it."
        ),
        required=False,
    )

    def cross_field_causes(self, data: dict) -> list[FieldError]:
        return validators.workflow_causes(data, inputs=validators.keys(data.get("inputs")))


def outputs_map(**kwargs: Any) -> BoundedMapField:
    return string_map(MAX_OUTPUTS, **kwargs)


class ActionStepStatusSerializer(StrictSerializer):
    name = LabelValueField(help_text="The step's name.")
    phase = serializers.ChoiceField(
        help_text="Where the step is: Pending, Running, Succeeded or Failed.",
        choices=StepPhase.values,
    )
    runName = StrictCharField(
        help_text="The Run that carries out the step.",
        max_length=253,
        required=False,
        allow_blank=True,
    )
    outputs = outputs_map(help_text="The step's outputs, by name.")


class StepStatusSerializer(ActionStepStatusSerializer):
    actionSteps = BoundedListField(
        help_text="The state of each step of the Action the step uses.",
        child=ActionStepStatusSerializer(),
        max_items=MAX_STEPS,
        required=False,
    )


class JobStatusSerializer(StrictSerializer):
    phase = serializers.ChoiceField(
        help_text="Where the job is: Pending (its needs have not all succeeded), Waiting, Running, Succeeded, Failed or Skipped (a job it needs failed).",
        choices=JobPhase.values,
    )
    # the jobs it waits for: its direct needs, sorted (as kruntimes resolves them)
    pre = BoundedListField(
        help_text="The jobs this one waits for.",
        child=StrictCharField(max_length=MAX_JOB_NAME, allow_blank=True),
        max_items=MAX_PRE,
        required=False,
    )
    # why the job waits, failed or was skipped, in words (never workspace binding details)
    message = StrictCharField(
        help_text="A human-readable account of the job's state.",
        max_length=4096,
        required=False,
        allow_blank=True,
    )
    # why it failed, as a CamelCase word, when a machine may act on it (CallDepthExceeded)
    reason = StrictCharField(
        help_text="A CamelCase word saying why the job is in its phase.",
        max_length=128,
        required=False,
        allow_blank=True,
    )
    workflowRunName = StrictCharField(
        help_text="The child WorkflowRun of a job that uses a Workflow.",
        max_length=253,
        required=False,
        allow_blank=True,
    )
    outputs = outputs_map(help_text="The job's outputs, by name.")
    artifacts = NamedMapField(
        help_text="The artifacts the job's steps stored, by name.",
        max_properties=MAX_ARTIFACTS,
        child=ArtifactRefSerializer(),
        required=False,
    )
    steps = BoundedListField(
        help_text="The state of each of the job's steps.",
        child=StepStatusSerializer(),
        max_items=MAX_STEPS,
        required=False,
    )


# a workspace or called WorkflowRun per job, a Run per step (or per step of its Action)
MAX_CHILDREN = MAX_JOBS * (1 + MAX_STEPS * MAX_STEPS)


class ChildSerializer(StrictSerializer):
    """One object the controller created for the run: the only ones it reads."""

    kind = serializers.ChoiceField(
        help_text="The child's kind: Run, PersistentWorkspace, WorkflowRun or ControllerRevision.",
        choices=("Run", "PersistentWorkspace", "WorkflowRun", "ControllerRevision"),
    )
    name = SubdomainField(help_text="The child's name in the WorkflowRun's namespace.")
    uid = StrictCharField(help_text="The child's uid.", max_length=36)


class WorkflowRunStatusSerializer(StrictSerializer):
    """WorkflowRunStatus is the observed state of a WorkflowRun, set by the server."""

    phase = serializers.ChoiceField(
        help_text=(
            "Where the WorkflowRun is in its life (Pending, Running, Succeeded, Failed, "
            "Cancelled ...)."
        ),
        choices=WorkflowRunPhase.values,
        required=False,
    )
    observedGeneration = StrictIntegerField(
        help_text="The metadata.generation this status was computed from.",
        min_value=0,
        required=False,
    )
    jobs = NamedMapField(
        help_text="The state of each job, by name.",
        max_properties=MAX_JOBS,
        child=JobStatusSerializer(),
        key_errors=name_errors,
        required=False,
    )
    outputs = outputs_map(help_text="The WorkflowRun's outputs, by name, once its jobs ended.")
    message = StrictCharField(
        help_text="A human-readable account of the WorkflowRun's state.",
        max_length=MAX_MESSAGE,
        required=False,
        allow_blank=True,
    )
    conditions = ConditionsField(required=False)
    children = BoundedListField(
        help_text="The objects the controller created for the run; the only ones it reads.",
        child=ChildSerializer(),
        max_items=MAX_CHILDREN,
        required=False,
    )
    # the apps/v1 ControllerRevision holding the definitions the run resolved at its start
    snapshotName = StrictCharField(
        help_text="The ControllerRevision holding the Workflow as it was when the run started.",
        max_length=MAX_SNAPSHOT_NAME,
        required=False,
        allow_blank=True,
    )
