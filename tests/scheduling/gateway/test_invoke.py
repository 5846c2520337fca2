"""An invocation end to end: the caller's body reaches the function with the fence runtimed
checks, the function's answer is the response, and every limit and gRPC code is answered as
docs/function-gateway.md says, always as a Status with the invocation ID."""

from __future__ import annotations

import uuid

import pytest

from runtimed.protocol import (
    ATTEMPT_METADATA,
    DATAPLANE_KEY_METADATA,
    DEFAULT_INVOKE_TIMEOUT_SECONDS,
    MAX_INVOKE_BYTES,
    MAX_INVOKE_TIMEOUT_SECONDS,
    POD_UID_METADATA,
)
from scheduling import dataplane

pytestmark = pytest.mark.django_db(transaction=True)

ID = "X-Kruntime-Invocation-ID"


def assert_failure(response, code: int, reason: str) -> dict:
    body = response.json()
    assert response.status_code == code, body
    assert response.headers["content-type"] == "application/json"
    assert body["kind"] == "Status" and body["apiVersion"] == "v1", body
    assert body["status"] == "Failure" and body["code"] == code and body["reason"] == reason
    assert body["details"]["invocationID"] == response.headers[ID]
    return body


def test_the_body_reaches_the_function_and_its_answer_is_the_response(world):
    response = world.invoke(
        body=b'{"question": 42}', headers={ID: "call-1", "Content-Type": "application/json"}
    )

    assert response.status_code == 200, response.text
    assert response.content == b'{"question": 42}'
    assert response.headers["content-type"] == "application/json"
    assert response.headers[ID] == "call-1"
    assert response.headers["X-Kruntime-Outputs"] == '{"bytes":"16"}'
    received = world.server.functions.last()
    assert received.request.registration.run_uid == world.run.uid
    assert received.request.registration.registration_id == ""
    assert received.request.invocation_id == "call-1"
    assert received.request.input == b'{"question": 42}'
    assert received.request.content_type == "application/json"
    assert received.request.timeout_millis == DEFAULT_INVOKE_TIMEOUT_SECONDS * 1000


def test_the_fence_arrives_as_metadata(world):
    assert world.invoke().status_code == 200
    metadata = world.server.functions.last().metadata
    # the key of the Run's namespace: another namespace's pods would refuse it
    assert metadata[DATAPLANE_KEY_METADATA] == dataplane.key(world.run.namespace)
    assert metadata[DATAPLANE_KEY_METADATA] != dataplane.key("elsewhere")
    assert metadata[ATTEMPT_METADATA] == "2"
    assert metadata[POD_UID_METADATA] == str(world.pod.uid)


def test_without_an_invocation_id_one_is_made_and_returned(world):
    response = world.invoke()
    assert response.status_code == 200
    made = response.headers[ID]
    assert uuid.UUID(made).version == 4
    assert world.server.functions.last().request.invocation_id == made


def test_the_content_type_is_passed_on_and_json_by_default(world):
    assert world.invoke(body=b"plain", headers={"Content-Type": "text/plain"}).status_code == 200
    assert world.server.functions.last().request.content_type == "text/plain"
    world.client.headers.pop("content-type", None)
    response = world.client.post(
        world.run.path, content=b"{}", headers={"Authorization": f"Bearer {world.alice}"}
    )
    assert response.status_code == 200
    assert world.server.functions.last().request.content_type == "application/json"


def test_an_invocation_id_over_128_bytes_is_400(world):
    body = assert_failure(world.invoke(headers={ID: "x" * 129}), 400, "BadRequest")
    assert body["details"]["causes"][0]["field"] == ID
    assert body["details"]["invocationID"] != "x" * 129
    assert world.invoke(headers={ID: "x" * 128}).status_code == 200


@pytest.mark.parametrize(
    ("query", "millis"),
    [
        ({"timeout": "1500ms"}, 1500),
        ({"timeout": "30s"}, 30_000),
        ({"timeout": "2m"}, 120_000),
        ({"timeout": "7"}, 7000),
        ({"timeout": "99999"}, MAX_INVOKE_TIMEOUT_SECONDS * 1000),
    ],
)
def test_the_timeout_comes_from_the_query_bounded(world, query, millis):
    assert world.invoke(params=query).status_code == 200
    assert world.server.functions.last().request.timeout_millis == millis


def test_the_timeout_header_is_read_when_the_query_has_none(world):
    assert world.invoke(headers={"X-Kruntime-Timeout": "3s"}).status_code == 200
    assert world.server.functions.last().request.timeout_millis == 3000


@pytest.mark.parametrize("value", ["soon", "0", "-1s", "1d"])
def test_an_unreadable_timeout_is_400_naming_it(world, value):
    body = assert_failure(world.invoke(params={"timeout": value}), 400, "BadRequest")
    assert body["details"]["causes"][0]["field"] == "timeout"


def test_a_body_of_the_limit_is_served_and_one_byte_more_is_413(world):
    limit = b"a" * MAX_INVOKE_BYTES
    served = world.invoke(body=limit, headers={"Content-Type": "application/octet-stream"})
    assert served.status_code == 200
    assert served.content == limit

    calls = len(world.server.functions.received)
    over = world.invoke(body=limit + b"a")
    assert_failure(over, 413, "RequestEntityTooLarge")
    assert len(world.server.functions.received) == calls  # never dispatched


def test_a_chunked_body_over_the_limit_is_413(world):
    def chunks():
        for _ in range(17):
            yield b"b" * 65536  # 17 x 64 KiB: over 1 MiB, no Content-Length

    response = world.client.post(
        world.run.path, content=chunks(), headers={"Authorization": f"Bearer {world.alice}"}
    )
    assert_failure(response, 413, "RequestEntityTooLarge")


@pytest.mark.parametrize(
    ("code", "status", "reason"),
    [
        ("INVALID_ARGUMENT", 400, "BadRequest"),
        ("NOT_FOUND", 404, "NotFound"),
        ("FAILED_PRECONDITION", 503, "ServiceUnavailable"),
        ("RESOURCE_EXHAUSTED", 429, "TooManyRequests"),
        ("DEADLINE_EXCEEDED", 504, "Timeout"),
        ("UNAVAILABLE", 503, "ServiceUnavailable"),
        ("PERMISSION_DENIED", 502, "BadGateway"),
    ],
)
def test_grpc_codes_are_answered_as_http(world, code, status, reason):
    response = world.invoke(body=f"abort:{code}:said the runtime".encode(), headers={ID: "c-9"})
    body = assert_failure(response, status, reason)
    assert "said the runtime" in body["message"]
    assert body["details"]["invocationID"] == "c-9"
    if status in (429, 503):
        assert response.headers["Retry-After"] == "1"
        assert body["details"]["retryAfterSeconds"] == 1


def test_a_handler_that_raises_is_502_handler_error(world):
    body = assert_failure(world.invoke(body=b"raise"), 502, "HandlerError")
    assert "the function failed" in body["message"]


def test_an_invocation_past_its_timeout_is_504(world):
    response = world.invoke(body=b"sleep:4", params={"timeout": "100ms"})
    assert_failure(response, 504, "Timeout")


def test_an_invocation_is_never_retried(world):
    calls = len(world.server.functions.received)
    assert world.invoke(body=b"abort:UNAVAILABLE:going away").status_code == 503
    assert len(world.server.functions.received) == calls + 1


def test_other_methods_on_the_path_are_405(world):
    response = world.invoke(method="GET", body=b"")
    assert_failure(response, 405, "MethodNotAllowed")
    assert response.headers["Allow"] == "POST"


def test_other_paths_go_to_the_api(world):
    response = world.client.get(
        "/apis/kruntimes.io/v1alpha1/namespaces/team-a/runs/fn",
        headers={"Authorization": f"Bearer {world.alice}"},
    )
    assert response.status_code == 200
    assert response.json()["metadata"]["uid"] == world.run.uid
    near = world.client.post(
        "/v1/namespaces/team-a/runs/fn/invoke", headers={"Authorization": f"Bearer {world.alice}"}
    )
    assert near.status_code == 404  # not an invoke path (no uid): Django's answer


def answered(code: int) -> float:
    from prometheus_client import REGISTRY

    found = REGISTRY.get_sample_value("kruntimes_function_invocations_total", {"code": str(code)})
    return found or 0.0


def test_every_answer_is_counted_and_only_failures_are_logged(world, caplog):
    ok, busy = answered(200), answered(429)
    caplog.set_level("INFO", logger="scheduling.gateway")
    assert world.invoke().status_code == 200
    assert (
        world.invoke(body=b"abort:RESOURCE_EXHAUSTED:busy", headers={ID: "c-7"}).status_code == 429
    )
    assert answered(200) == ok + 1 and answered(429) == busy + 1
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("scheduling.gateway")]
    assert len(lines) == 1, lines
    assert "code=429" in lines[0] and "invocation=c-7" in lines[0] and "run=fn" in lines[0]
    assert world.alice not in lines[0]
