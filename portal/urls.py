"""URLs: the Kubernetes-shaped API, OpenAPI, the admin console."""

from django.contrib import admin
from django.http import JsonResponse
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from portal.machinery.openapi.views import openapi_urlpatterns
from portal.machinery.routes import api_not_found_patterns, api_urlpatterns
from portal.metrics import metrics_view


def healthz(request):
    return JsonResponse({"status": "ok"})


urlpatterns = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    path("healthz", healthz),
    path("metrics", metrics_view),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("", include("scheduling.urls")),  # subresources like runs/log, before the kinds
    path("", include("workspaces.urls")),  # the admission webhook, before /apis/ is a 404
    path("", include("workflows.urls")),  # workflows/<name>/run, before the kinds
    path("", include("jobclasses.urls")),  # jobs/<name>/log, before the kinds
    *openapi_urlpatterns(),  # what kubectl validates and explains with
    *api_urlpatterns(),
    *api_not_found_patterns(),
]
