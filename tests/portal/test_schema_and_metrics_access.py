"""``/api/schema/`` and ``/metrics`` are served as kube-apiserver serves ``/openapi`` and its
metrics: not to anonymous requests (a 401 Status), the schema generated once per process with
an ETag, the metrics only with ``get`` on the non-resource URL ``/metrics`` (or when an operator
opens them to a scraper with ``KRUNTIMES_METRICS_ANONYMOUS``)."""

from __future__ import annotations

import json
import time

import pytest
from django.test import override_settings
from drf_spectacular.generators import SchemaGenerator
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from portal.machinery.openapi import api_schema
from tests.helpers.api import assert_status
from tests.helpers.rbac import bind_cluster_role, make_cluster_role

pytestmark = pytest.mark.django_db
SCHEMA = "/api/schema/"
JSON = "application/vnd.oai.openapi+json"
PROMETHEUS_ACCEPT = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"


@pytest.fixture
def fresh_schema():
    """The per-process schema cache emptied, so a test sees the first request's work."""
    api_schema._schema.cache_clear()
    api_schema._rendered.cache_clear()
    yield
    api_schema._schema.cache_clear()
    api_schema._rendered.cache_clear()


@pytest.fixture
def generations(monkeypatch, fresh_schema) -> list[float]:
    """The seconds each schema generation took."""
    taken: list[float] = []
    real = SchemaGenerator.get_schema

    def timed(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return real(self, *args, **kwargs)
        finally:
            taken.append(time.perf_counter() - started)

    monkeypatch.setattr(SchemaGenerator, "get_schema", timed)
    return taken


@pytest.mark.parametrize("accept", ["", JSON, "application/yaml"])
def test_the_schema_is_401_without_credentials(anon_api, accept):
    response = anon_api.get(SCHEMA, HTTP_ACCEPT=accept) if accept else anon_api.get(SCHEMA)
    assert response["Content-Type"] == "application/json"
    assert_status(response, 401, "Unauthorized")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_the_schema_is_401_with_a_bad_token(anon_api):
    anon_api.credentials(HTTP_AUTHORIZATION="Bearer not-a-token")
    assert_status(anon_api.get(SCHEMA), 401, "Unauthorized")


def test_the_schema_is_generated_once_per_process(user_api, generations):
    timings = []
    for accept in ("application/yaml", "application/yaml", JSON, JSON):
        started = time.perf_counter()
        response = user_api.get(SCHEMA, HTTP_ACCEPT=accept)
        timings.append(time.perf_counter() - started)
        assert response.status_code == 200
    assert len(generations) == 1
    print(f"schema: first {timings[0]:.3f}s, second {timings[1]:.4f}s")
    assert timings[1] < timings[0] / 10


def test_any_authenticated_user_reads_it_in_either_format(user_api, fresh_schema):
    as_json = user_api.get(SCHEMA, HTTP_ACCEPT=JSON)
    assert as_json["Content-Type"] == JSON
    assert (
        "/apis/kruntimes.io/v1alpha1/namespaces/{namespace}/runs"
        in json.loads(as_json.content)["paths"]
    )
    as_yaml = user_api.get(SCHEMA)
    assert as_yaml["Content-Type"] == "application/vnd.oai.openapi; charset=utf-8"
    assert as_yaml.content.startswith(b"openapi: 3")
    assert as_yaml["ETag"] != as_json["ETag"]
    assert as_yaml["Vary"] == "Accept"


def test_an_unchanged_schema_is_304_on_if_none_match(user_api, fresh_schema):
    first = user_api.get(SCHEMA)
    etag = first["ETag"]
    assert etag.startswith('"') and etag.endswith('"')
    again = user_api.get(SCHEMA, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again.content == b""
    assert again["ETag"] == etag
    other = user_api.get(SCHEMA, HTTP_IF_NONE_MATCH='"something-else"')
    assert other.status_code == 200 and other.content == first.content


def test_the_schema_view_itself_is_not_in_the_schema(user_api, fresh_schema):
    paths = json.loads(user_api.get(SCHEMA, HTTP_ACCEPT=JSON).content)["paths"]
    assert SCHEMA not in paths and "/metrics" not in paths


@pytest.mark.parametrize("accept", ["", "text/plain", PROMETHEUS_ACCEPT])
def test_metrics_are_401_without_credentials(anon_api, accept):
    response = anon_api.get("/metrics", HTTP_ACCEPT=accept) if accept else anon_api.get("/metrics")
    body = assert_status(response, 401, "Unauthorized")
    assert response["Content-Type"] == "application/json"
    assert "kruntimes_" not in json.dumps(body)


def test_metrics_are_403_without_the_grant(user_api):
    body = assert_status(user_api.get("/metrics"), 403, "Forbidden")
    assert body["message"] == 'forbidden: User "alice" cannot get path "/metrics"'


def test_a_grant_on_another_path_does_not_reach_metrics(admin_api, user_api):
    make_cluster_role(admin_api, "health", [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}])
    bind_cluster_role(admin_api, "alice-health", "health")
    assert_status(user_api.get("/metrics"), 403, "Forbidden")


def test_metrics_are_served_with_get_on_the_non_resource_url(admin_api, user_api):
    rule = {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}
    make_cluster_role(admin_api, "metrics-reader", [rule])
    bind_cluster_role(admin_api, "alice-metrics", "metrics-reader")
    response = user_api.get("/metrics", HTTP_ACCEPT=PROMETHEUS_ACCEPT)
    assert response.status_code == 200
    assert response["Content-Type"] == CONTENT_TYPE_LATEST
    assert b"kruntimes_" in response.content


@override_settings(KRUNTIMES_METRICS_ANONYMOUS=True)
def test_an_operator_may_open_metrics_to_a_scraper_without_a_token(anon_api):
    response = anon_api.get("/metrics", HTTP_ACCEPT=PROMETHEUS_ACCEPT)
    assert response.status_code == 200
    assert b"kruntimes_" in response.content
