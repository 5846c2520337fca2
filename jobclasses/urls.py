"""The jobclasses app's own API paths: the ``jobs/log`` subresource (before the generic ones)."""

from django.urls import path

from jobclasses.views import JobLogView

urlpatterns = [
    path(
        "apis/execution.ayatori.ddupan.top/v1alpha1/namespaces/<str:namespace>/jobs/<str:name>/log",
        JobLogView.as_view(),
        name="job-log",
    ),
]
