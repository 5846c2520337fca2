"""The workflows app's own API paths: the ``workflows/<name>/run`` subresource."""

from django.urls import path

from workflows.views import StartWorkflowView

urlpatterns = [
    path(
        "apis/kruntimes.io/v1alpha1/namespaces/<str:namespace>/workflows/<str:name>/run",
        StartWorkflowView.as_view(),
        name="workflow-run",
    ),
]
