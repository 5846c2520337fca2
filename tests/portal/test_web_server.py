"""The web server's own refusals are Status objects: a request target past 64 KiB (a 100 KB
``labelSelector``) is a 414 Status and a malformed request a 400 Status, where uvicorn answered
plain text; a target within the limit reaches the portal as before."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn

from portal.web_server import (
    MAX_REQUEST_TARGET_BYTES,
    StatusHttpToolsProtocol,
    StatusUvicornWorker,
)


async def echo_target(scope, receive, send) -> None:
    """Answers 200 with the length of the target it was given."""
    if scope["type"] != "http":
        return
    size = len(scope["raw_path"]) + len(scope["query_string"]) + 1
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": str(size).encode()})


@pytest.fixture
def server() -> Iterator[int]:
    config = uvicorn.Config(
        echo_target, host="127.0.0.1", port=0, http=StatusHttpToolsProtocol, log_level="critical"
    )
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not running.started:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    yield running.servers[0].sockets[0].getsockname()[1]
    running.should_exit = True
    thread.join(timeout=10)


def raw(port: int, request: bytes) -> http.client.HTTPResponse:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(request)
    response = http.client.HTTPResponse(sock)
    response.begin()
    return response


def get(port: int, target: str) -> http.client.HTTPResponse:
    return raw(port, f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())


def test_a_100_kb_label_selector_is_a_414_status(server):
    response = get(server, "/apis/kruntimes.io/v1alpha1/runs?labelSelector=" + "a" * 100_000)
    assert response.status == 414
    assert response.getheader("content-type") == "application/json"
    body = json.loads(response.read())
    assert (body["kind"], body["code"], body["reason"]) == ("Status", 414, "RequestURITooLong")
    assert str(MAX_REQUEST_TARGET_BYTES) in body["message"]


def test_a_target_at_the_limit_reaches_the_application(server):
    target = "/r?s=" + "a" * (MAX_REQUEST_TARGET_BYTES - len("/r?s="))
    response = get(server, target)
    assert response.status == 200
    assert int(response.read()) == MAX_REQUEST_TARGET_BYTES
    assert get(server, target + "a").status == 414


def test_a_malformed_request_is_a_400_status(server):
    response = raw(server, b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
    assert response.status == 400
    body = json.loads(response.read())
    assert (body["kind"], body["reason"]) == ("Status", "BadRequest")


def test_the_gunicorn_worker_serves_with_this_protocol():
    config = uvicorn.Config(echo_target, **StatusUvicornWorker.CONFIG_KWARGS)
    config.load()
    assert config.http_protocol_class is StatusHttpToolsProtocol
