"""apps/v1 ControllerRevision: an immutable snapshot of state a controller keeps (the workflow
controller's record of a WorkflowRun's resolved definitions, ``status.snapshotName``).

As in Kubernetes (``ValidateControllerRevision``/``...Update``): ``data`` is mandatory and never
changes after create, ``revision`` is non-negative. Who may write one is RBAC's to say: the
default ``view``, ``edit`` and ``admin`` roles only read them (``portal.auth.default_roles``), and
a controller ownerReference to a WorkflowRun needs its finalizers (``owner_admission``).
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from portal.machinery import errors
from portal.machinery.errors import FieldError
from portal.machinery.registry import Column, ResourceKind, registry
from portal.machinery.serializers import StrictIntegerField

GROUP, VERSION, PLURAL = "apps", "v1", "controllerrevisions"
IMMUTABLE = "field is immutable"


def validate_controller_revision(
    new: dict[str, Any], old: dict[str, Any] | None
) -> list[FieldError]:
    causes = []
    if new.get("data") is None:
        causes.append(errors.required("data", "data is mandatory"))
    if old is not None and new.get("data") != old.get("data"):
        causes.append(errors.invalid("data", IMMUTABLE))
    return causes


def register_revision_kinds() -> None:
    from portal.models import ControllerRevision

    registry.register(
        ResourceKind(
            group=GROUP,
            version=VERSION,
            kind="ControllerRevision",
            strategic_merge={},  # data is a RawExtension: merged as a map
            plural=PLURAL,
            description=(
                "ControllerRevision is an immutable snapshot of state a controller keeps, such "
                "as the definitions a WorkflowRun started from."
            ),
            model=ControllerRevision,
            body={
                "data": serializers.JSONField(
                    required=False,
                    allow_null=True,
                    help_text="The state being recorded, any JSON value; kept as given.",
                ),
                "revision": StrictIntegerField(
                    min_value=0,
                    default=0,
                    help_text="The revision's number among its owner's revisions (0 or more).",
                ),
            },
            status=None,
            generation_fields=(),
            validators=(validate_controller_revision,),
            columns=(Column("REVISION", lambda o: o.revision),),
        )
    )
