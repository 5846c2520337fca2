"""The official Python ``kubernetes`` client's deletes against a live portal: its
``V1DeleteOptions`` body (no kind, no apiVersion, and no Content-Type either) and its query
arguments both count."""

from __future__ import annotations

import threading

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from rest_framework.authtoken.models import Token

from portal.models import Namespace
from tests.helpers.runs import run_manifest

pytestmark = pytest.mark.django_db(transaction=True)
RUNS = ("kruntimes.io", "v1alpha1", "default", "runs")


class AsSent(WSGIRequestHandler):
    """wsgiref makes a missing Content-Type "text/plain"; gunicorn (``manage.py up``) leaves it
    out, as the client sent it (client 37 sends none with its bodies)."""

    def get_environ(self) -> dict:
        environ = super().get_environ()
        if self.headers.get("content-type") is None:
            environ.pop("CONTENT_TYPE", None)
        return environ

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server_url(transactional_db):
    server = ThreadedWSGIServer(("127.0.0.1", 0), AsSent, allow_reuse_address=False)
    server.set_app(WSGIHandler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def api(server_url, admin_user):
    Namespace.objects.get_or_create(name="default")  # a transactional test starts empty
    configuration = client.Configuration(host=server_url)
    configuration.api_key = {"authorization": Token.objects.create(user=admin_user).key}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    with client.ApiClient(configuration) as api_client:
        objects = client.CustomObjectsApi(api_client)
        for name, team in (("one", "x"), ("two", "x")):
            manifest = run_manifest(name, metadata={"labels": {"team": team}})
            objects.create_namespaced_custom_object(*RUNS, manifest)
        yield objects


def names(api) -> list[str]:
    return sorted(i["metadata"]["name"] for i in api.list_namespaced_custom_object(*RUNS)["items"])


def test_a_dry_run_in_the_body_deletes_nothing(api):
    answered = api.delete_namespaced_custom_object(
        *RUNS, "one", body=client.V1DeleteOptions(dry_run=["All"])
    )
    # a Run holds its cleanup finalizer: the answer is the Run as the delete would leave it
    assert answered["metadata"]["deletionTimestamp"]
    assert names(api) == ["one", "two"]
    stored = api.get_namespaced_custom_object(*RUNS, "one")
    assert "deletionTimestamp" not in stored["metadata"]


def test_a_dry_run_as_a_query_argument_deletes_nothing(api):
    api.delete_namespaced_custom_object(*RUNS, "one", dry_run="All")
    assert names(api) == ["one", "two"]


def test_a_collection_dry_run_deletes_nothing(api):
    answered = api.delete_collection_namespaced_custom_object(
        *RUNS, label_selector="team=x", body=client.V1DeleteOptions(dry_run=["All"])
    )
    assert sorted(i["metadata"]["name"] for i in answered["items"]) == ["one", "two"]
    assert names(api) == ["one", "two"]


def test_a_precondition_that_does_not_hold_is_a_409(api):
    options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="not-it"))
    with pytest.raises(ApiException) as refused:
        api.delete_namespaced_custom_object(*RUNS, "one", body=options)
    assert refused.value.status == 409
    assert "the UID in the precondition (not-it)" in refused.value.body
    assert names(api) == ["one", "two"]


def test_a_real_delete_marks_the_run_for_its_cleanup(api):
    uid = api.get_namespaced_custom_object(*RUNS, "one")["metadata"]["uid"]
    options = client.V1DeleteOptions(
        propagation_policy="Foreground", preconditions=client.V1Preconditions(uid=uid)
    )
    answered = api.delete_namespaced_custom_object(*RUNS, "one", body=options)
    assert answered["metadata"]["deletionTimestamp"]
