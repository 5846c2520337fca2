"""The scheduling app's own API paths: the ``runs/log`` and ``runs/artifacts`` subresources (before the generic ones)."""

from django.urls import path

from scheduling.artifact_views import RunArtifactView
from scheduling.log_views import RunLogView

urlpatterns = [
    path(
        "apis/kruntimes.io/v1alpha1/namespaces/<str:namespace>/runs/<str:name>/log",
        RunLogView.as_view(),
        name="run-log",
    ),
    path(
        "apis/kruntimes.io/v1alpha1/namespaces/<str:namespace>/runs/<str:name>/artifacts/<str:artifact>",
        RunArtifactView.as_view(),
        name="run-artifact",
    ),
]
