"""The workspaces app's own API paths: the validating admission webhook for Run creates."""

from django.urls import path

from workspaces.webhook import ValidateRunView

WEBHOOK_PATH = "apis/admission.kruntimes.io/v1/validate"

urlpatterns = [path(WEBHOOK_PATH, ValidateRunView.as_view(), name="workspaces-validate-run")]
