"""A body sent with ``Transfer-Encoding: chunked`` (no Content-Length) is read, under each
server the project runs: uvicorn (``manage.py up`` and the Helm chart, httptools or h11), and
gunicorn's WSGI workers (the Docker image: ``wsgi.input_terminated``). A server that cannot say
where such a body ends (wsgiref: ``runserver``, the test live server) gets a 411 Status, never
an empty body."""

from __future__ import annotations

import http.client
import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
import uvicorn
from django.core.asgi import get_asgi_application
from django.test import override_settings
from rest_framework.authtoken.models import Token

from portal.models import Namespace
from scheduling.models import Run
from tests.helpers.api import assert_status
from tests.helpers.runs import run_manifest, runs_url
from tests.helpers.workflows import create, run_url, workflow_manifest
from workflows.models import WorkflowRun


def chunks(body: dict, size: int = 7) -> list[bytes]:
    raw = json.dumps(body).encode()
    return [raw[i : i + size] for i in range(0, len(raw), size)]


def gunicorn_post(client, path: str, body: bytes, terminated: bool = True):
    """A POST as gunicorn's WSGI worker hands it on: no CONTENT_LENGTH, the decoded body in
    ``wsgi.input``, and ``wsgi.input_terminated`` saying it ends where the body ends."""
    environ = {"wsgi.input": io.BytesIO(body), "HTTP_TRANSFER_ENCODING": "chunked"}
    if terminated:
        environ["wsgi.input_terminated"] = True
    return client.generic("POST", path, b"", content_type="application/json", **environ)


@pytest.mark.django_db
def test_a_chunked_run_create_is_read_under_gunicorn(admin_api):
    response = gunicorn_post(admin_api, runs_url(), json.dumps(run_manifest("chunky")).encode())
    assert response.status_code == 201, response.json()
    assert Run.objects.get(name="chunky").spec["runtime"] == "bash"


@pytest.mark.django_db
def test_a_chunked_workflow_start_uses_the_inputs_sent(admin_api):
    create(workflow_manifest("ci", inputs={"who": {"default": "nobody"}}))
    body = json.dumps({"inputs": {"who": "me"}}).encode()
    response = gunicorn_post(admin_api, run_url("ci"), body)
    assert response.status_code == 201, response.json()
    started = WorkflowRun.objects.get(name=response.json()["metadata"]["name"])
    assert started.spec["inputs"] == {"who": "me"}


@pytest.mark.django_db
@override_settings(KRUNTIMES_MAX_REQUEST_BYTES=1024)
def test_a_chunked_body_over_the_limit_is_413(admin_api):
    manifest = run_manifest("big", metadata={"annotations": {"pad": "x" * 2000}})
    response = gunicorn_post(admin_api, runs_url(), json.dumps(manifest).encode())
    assert_status(response, 413, "RequestEntityTooLarge")
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_a_chunked_body_the_server_cannot_end_is_411_not_empty(admin_api):
    body = json.dumps(run_manifest("chunky")).encode()
    response = gunicorn_post(admin_api, runs_url(), body, terminated=False)
    body = assert_status(response, 411, "LengthRequired")
    assert "Content-Length" in body["message"]
    assert not Run.objects.exists()


def send_chunked(base: str, path: str, token: str, body: dict) -> tuple[int, dict]:
    """The request written in one go (a server that refuses it unread cannot break the pipe)."""
    parts = urlsplit(base)
    framed = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks(body)) + b"0\r\n\r\n"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {parts.hostname}\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(head.encode() + framed)
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, json.loads(response.read())


@pytest.fixture(params=["httptools", "h11"])
def uvicorn_server(request) -> Iterator[str]:
    """The portal's ASGI application under uvicorn, in this process (the test database)."""
    config = uvicorn.Config(
        get_asgi_application(), host="127.0.0.1", port=0, http=request.param, log_level="error"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn never started"
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def default_namespace():
    """The namespace a migration made, which a transactional test's flush removed."""
    Namespace.objects.get_or_create(name="default", defaults={"spec": {"finalizers": []}})


@pytest.mark.django_db(transaction=True)
def test_chunked_bodies_are_read_under_uvicorn(uvicorn_server, admin_user, default_namespace):
    token = Token.objects.create(user=admin_user).key
    status, body = send_chunked(uvicorn_server, runs_url(), token, run_manifest("chunky"))
    assert status == 201, body
    assert body["metadata"]["name"] == "chunky"
    create(workflow_manifest("ci", inputs={"who": {"default": "nobody"}}))
    status, body = send_chunked(uvicorn_server, run_url("ci"), token, {"inputs": {"who": "me"}})
    assert status == 201, body
    assert body["spec"]["inputs"] == {"who": "me"}


@pytest.mark.django_db(transaction=True)
def test_a_chunked_body_under_wsgiref_is_411(live_server, admin_user, default_namespace):
    token = Token.objects.create(user=admin_user).key
    status, body = send_chunked(live_server.url, runs_url(), token, run_manifest("chunky"))
    assert (status, body["kind"], body["reason"]) == (411, "Status", "LengthRequired")
    assert not Run.objects.exists()
