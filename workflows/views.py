"""``POST .../namespaces/<ns>/workflows/<name>/run``: start a Workflow.

The body is ``{"inputs": {...}, "metadata": {"name" | "generateName": ...}}`` (both optional);
the answer is a 201 with the WorkflowRun created (``workflows.starting.start``), authorized as
``create`` on workflowruns for the caller. Every failure is a Kubernetes Status: 400 for a body
of another shape, 403, 404 for a missing Workflow, 422 for inputs the Workflow refuses.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from portal.machinery.admission import authorize
from portal.machinery.manifest import to_manifest
from portal.machinery.registry import registry
from portal.machinery.views import KubeView

from .kinds import RUN_SUBRESOURCE
from .models import Workflow
from .starting import check_start_body, start, workflow_run_kind

OBJECT = {"type": "object", "additionalProperties": True}


class StartWorkflowView(KubeView):
    subresource = RUN_SUBRESOURCE
    http_method_names = ["post", "options"]

    @property
    def kind(self):
        return registry.for_model(Workflow)

    @extend_schema(
        operation_id="runWorkflow",
        request={"application/json": OBJECT},  # a bare dict would read as media types
        responses={201: OBJECT},
        tags=["kruntimes.io/v1alpha1"],
        description="Start the Workflow: create a WorkflowRun with its jobs frozen.",
    )
    def post(self, request: Request, namespace: str, name: str) -> Response:
        # authorized before the body is read, as every write here
        context = authorize(self.context(request), workflow_run_kind(), "create", namespace)
        body = self.body(request)
        check_start_body(body)
        run = start(
            namespace,
            name,
            inputs=body.get("inputs"),
            metadata=body.get("metadata"),
            context=context,
        )
        return Response(to_manifest(workflow_run_kind(), run), status=201)
