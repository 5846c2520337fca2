"""URLs: the Kubernetes-shaped API, OpenAPI, the admin console."""

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerView

from portal.machinery import server_info
from portal.machinery.openapi.api_schema import APISchemaView
from portal.machinery.openapi.views import openapi_urlpatterns
from portal.machinery.routes import api_not_found_patterns, api_urlpatterns
from portal.metrics import metrics_view

urlpatterns = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    # what a browser asks for on any page (the admin's pages link the SVG themselves)
    path("favicon.ico", RedirectView.as_view(url="/static/portal/favicon.svg", permanent=True)),
    path("version", server_info.version),
    path("version/", server_info.version),  # the Python client asks with the slash
    path("healthz", server_info.ok),
    path("livez", server_info.ok),
    path("readyz", server_info.readyz),
    path("metrics", metrics_view),
    path("admin/", admin.site.urls),
    path("api/schema/", APISchemaView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="redoc"),
    path("", include("scheduling.urls")),  # subresources like runs/log, before the kinds
    path("", include("workspaces.urls")),  # the admission webhook, before /apis/ is a 404
    path("", include("workflows.urls")),  # workflows/<name>/run, before the kinds
    path("", include("jobclasses.urls")),  # jobs/<name>/log, before the kinds
    *openapi_urlpatterns(),  # what kubectl validates and explains with
    *api_urlpatterns(),
    *api_not_found_patterns(),
]
