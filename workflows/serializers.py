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
    type = serializers.ChoiceField(choices=["string"], default="string")
    required = StrictBooleanField(required=False)
    default = StrictCharField(max_length=MAX_VALUE, required=False, allow_blank=True)


class OutputSpecSerializer(StrictSerializer):
    value = StrictCharField(max_length=MAX_VALUE)


class StepArtifactSerializer(StrictSerializer):
    """An artifact of a job this step's job needs, staged at ``path`` before the step runs."""

    # "from" is a Python keyword: declared in get_fields
    path = StrictCharField(max_length=4096)

    def get_fields(self) -> dict:
        return {"from": ArtifactSourceField(), **super().get_fields()}

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
    return NamedMapField(max_properties=MAX_INPUTS, child=InputSpecSerializer(), required=False)


def outputs_field() -> NamedMapField:
    return NamedMapField(max_properties=MAX_OUTPUTS, child=OutputSpecSerializer(), required=False)


def string_map(max_properties: int, **kwargs: Any) -> BoundedMapField:
    return BoundedMapField(max_properties=max_properties, required=False, **kwargs)


class StepSpecSerializer(StrictSerializer):
    name = LabelValueField()
    run = StrictCharField(max_length=MAX_RUN, required=False)
    uses = SubdomainField(max_length=253, required=False)
    # "with" is a Python keyword: declared in get_fields
    args = BoundedListField(
        child=StrictCharField(max_length=MAX_VALUE, allow_blank=True),
        max_items=MAX_ARGS,
        required=False,
    )
    env = NamedMapField(
        max_properties=MAX_ENV,
        child=StrictCharField(allow_blank=True),
        key_errors=env_var_name_errors,
        required=False,
    )
    artifacts = BoundedListField(
        child=StepArtifactSerializer(), max_items=MAX_ARTIFACTS, required=False
    )

    def get_fields(self) -> dict:
        return {**super().get_fields(), "with": string_map(MAX_WITH)}

    def cross_field_causes(self, data: dict) -> list[FieldError]:
        return validators.step_shape_causes(data)


class JobSpecSerializer(StrictSerializer):
    # "runs-on" is no Python name: declared in get_fields
    needs = BoundedListField(
        child=StrictCharField(max_length=63), max_items=MAX_NEEDS, required=False
    )
    steps = BoundedListField(
        child=StepSpecSerializer(), max_items=MAX_STEPS, min_length=1, required=False
    )
    uses = SubdomainField(max_length=253, required=False)
    outputs = string_map(MAX_OUTPUTS)

    def get_fields(self) -> dict:
        return {
            "runs-on": LabelValueField(required=False),
            **super().get_fields(),
            "with": string_map(MAX_WITH),
        }

    def cross_field_causes(self, data: dict) -> list[FieldError]:
        return validators.job_shape_causes(data)


def jobs_field(**kwargs: Any) -> NamedMapField:
    return NamedMapField(
        max_properties=MAX_JOBS,
        min_properties=1,
        child=JobSpecSerializer(),
        key_errors=name_errors,
        **kwargs,
    )


class WorkflowSpecSerializer(StrictSerializer):
    inputs = inputs_field()
    outputs = outputs_field()
    jobs = jobs_field()

    def cross_field_causes(self, data: dict) -> list[FieldError]:
        return validators.workflow_causes(data, inputs=validators.keys(data.get("inputs")))


class DefinitionStatusSerializer(StrictSerializer):
    """Workflow.status and Action.status: definition-level conditions (Ready)."""

    observedGeneration = StrictIntegerField(min_value=0, required=False)
    conditions = ConditionsField(required=False)


class ActionSpecSerializer(StrictSerializer):
    inputs = inputs_field()
    outputs = outputs_field()
    steps = BoundedListField(child=StepSpecSerializer(), max_items=MAX_STEPS, min_length=1)

    def cross_field_causes(self, data: dict) -> list[FieldError]:
        return validators.action_causes(data)


class WorkflowRefSerializer(StrictSerializer):
    name = SubdomainField(max_length=253)


class WorkflowRunSpecSerializer(StrictSerializer):
    """A run of frozen jobs: given inline, or copied from ``workflowRef`` at create
    (``workflows.starting``); ``inputs`` are the values its expressions read."""

    workflowRef = WorkflowRefSerializer(required=False)
    inputs = string_map(MAX_INPUTS, child=StrictCharField(max_length=MAX_VALUE, allow_blank=True))
    outputs = outputs_field()
    jobs = jobs_field()
    cancelRequested = StrictBooleanField(required=False)

    def cross_field_causes(self, data: dict) -> list[FieldError]:
        return validators.workflow_causes(data, inputs=validators.keys(data.get("inputs")))


def outputs_map() -> BoundedMapField:
    return string_map(MAX_OUTPUTS)


class ActionStepStatusSerializer(StrictSerializer):
    name = LabelValueField()
    phase = serializers.ChoiceField(choices=StepPhase.values)
    runName = StrictCharField(max_length=253, required=False, allow_blank=True)
    outputs = outputs_map()


class StepStatusSerializer(ActionStepStatusSerializer):
    actionSteps = BoundedListField(
        child=ActionStepStatusSerializer(), max_items=MAX_STEPS, required=False
    )


class JobStatusSerializer(StrictSerializer):
    phase = serializers.ChoiceField(choices=JobPhase.values)
    # the jobs it waits for: its direct needs, sorted (as kruntimes resolves them)
    pre = BoundedListField(
        child=StrictCharField(max_length=MAX_JOB_NAME, allow_blank=True),
        max_items=MAX_PRE,
        required=False,
    )
    # why the job waits, failed or was skipped, in words (never workspace binding details)
    message = StrictCharField(max_length=4096, required=False, allow_blank=True)
    # why it failed, as a CamelCase word, when a machine may act on it (CallDepthExceeded)
    reason = StrictCharField(max_length=128, required=False, allow_blank=True)
    workflowRunName = StrictCharField(max_length=253, required=False, allow_blank=True)
    outputs = outputs_map()
    artifacts = NamedMapField(
        max_properties=MAX_ARTIFACTS, child=ArtifactRefSerializer(), required=False
    )
    steps = BoundedListField(child=StepStatusSerializer(), max_items=MAX_STEPS, required=False)


# a workspace or called WorkflowRun per job, a Run per step (or per step of its Action)
MAX_CHILDREN = MAX_JOBS * (1 + MAX_STEPS * MAX_STEPS)


class ChildSerializer(StrictSerializer):
    """One object the controller created for the run: the only ones it reads."""

    kind = serializers.ChoiceField(
        choices=("Run", "PersistentWorkspace", "WorkflowRun", "ControllerRevision")
    )
    name = SubdomainField()
    uid = StrictCharField(max_length=36)


class WorkflowRunStatusSerializer(StrictSerializer):
    phase = serializers.ChoiceField(choices=WorkflowRunPhase.values, required=False)
    observedGeneration = StrictIntegerField(min_value=0, required=False)
    jobs = NamedMapField(
        max_properties=MAX_JOBS, child=JobStatusSerializer(), key_errors=name_errors, required=False
    )
    outputs = outputs_map()
    message = StrictCharField(max_length=MAX_MESSAGE, required=False, allow_blank=True)
    conditions = ConditionsField(required=False)
    children = BoundedListField(child=ChildSerializer(), max_items=MAX_CHILDREN, required=False)
    # the apps/v1 ControllerRevision holding the definitions the run resolved at its start
    snapshotName = StrictCharField(max_length=MAX_SNAPSHOT_NAME, required=False, allow_blank=True)
