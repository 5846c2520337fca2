"""Run.status through the /status subresource: phases, endpoint, artifact refs, outputs,
conditions and the fields the control plane reports."""

from __future__ import annotations

import pytest

from scheduling.models import Run
from tests.helpers.runs import (
    DUP,
    FORB,
    INV,
    LONG,
    MANY,
    NSUP,
    REQ,
    TYPE,
    artifact_ref,
    causes,
    merge_patch,
    run_manifest,
    runs_url,
)

pytestmark = pytest.mark.django_db

OK = None
STATUS_URL = f"{runs_url()}/r/status"
UUID = "0b5c3a4e-8f1d-4f7a-9a51-5d4f0c7e2b11"
ENDPOINT = {"protocol": "HTTPS", "url": "https://fn.example.com/runs/u", "caBundle": "LS0t"}


def condition(ctype: str = "Scheduled", status: str = "True", reason: str = "Scheduled") -> dict:
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": "",
        "lastTransitionTime": "2025-01-02T03:04:05Z",
        "observedGeneration": 1,
    }


def case(id_: str, status: dict, expected: dict | None):
    return pytest.param(status, expected, id=id_)


CASES = [
    *[
        case(f"phase-{p}", {"phase": p}, OK)
        for p in (
            "Pending",
            "Scheduled",
            "Running",
            "Ready",
            "Succeeded",
            "Failed",
            "Timeout",
            "Cancelled",
        )
    ],
    case("phase-finalizing", {"phase": "Finalizing"}, {"status.phase": NSUP}),
    case("phase-lowercase", {"phase": "running"}, {"status.phase": NSUP}),
    case("unknown-field", {"progress": 5}, {"status.progress": FORB}),
    case("assigned", {"assignedPod": "runtime-bash-0", "assignedPodUID": UUID}, OK),
    case("assigned-uid-37", {"assignedPodUID": UUID + "x"}, {"status.assignedPodUID": LONG}),
    case("assigned-pod-254", {"assignedPod": "p" * 254}, {"status.assignedPod": LONG}),
    # endpoint: HTTPS only
    case("endpoint", {"endpoint": ENDPOINT}, OK),
    case(
        "endpoint-http",
        {"endpoint": {**ENDPOINT, "protocol": "HTTP"}},
        {"status.endpoint.protocol": NSUP},
    ),
    case(
        "endpoint-no-protocol",
        {"endpoint": {"url": ENDPOINT["url"]}},
        {"status.endpoint.protocol": REQ},
    ),
    case("endpoint-no-url", {"endpoint": {"protocol": "HTTPS"}}, {"status.endpoint.url": REQ}),
    case("endpoint-url-2048", {"endpoint": {**ENDPOINT, "url": "u" * 2048}}, OK),
    case(
        "endpoint-url-2049",
        {"endpoint": {**ENDPOINT, "url": "u" * 2049}},
        {"status.endpoint.url": LONG},
    ),
    case("endpoint-ca-16384", {"endpoint": {**ENDPOINT, "caBundle": "c" * 16384}}, OK),
    case(
        "endpoint-ca-16385",
        {"endpoint": {**ENDPOINT, "caBundle": "c" * 16385}},
        {"status.endpoint.caBundle": LONG},
    ),
    # message, reason, exit code, times, counters
    case("message-4096", {"message": "m" * 4096}, OK),
    case("message-4097", {"message": "m" * 4097}, {"status.message": LONG}),
    case("reason", {"reason": "OutputsInvalid", "exitCode": 137}, OK),
    case("reason-lowercase", {"reason": "outputsInvalid"}, {"status.reason": INV}),
    case("reason-spaces", {"reason": "Outputs Invalid"}, {"status.reason": INV}),
    case("exit-code-string", {"exitCode": "1"}, {"status.exitCode": TYPE}),
    case(
        "observed-generation-negative",
        {"observedGeneration": -1},
        {"status.observedGeneration": INV},
    ),
    case(
        "times",
        {"startTime": "2025-01-02T03:04:05Z", "completionTime": "2025-01-02T03:05:05.5+01:00"},
        OK,
    ),
    case("start-time-bad", {"startTime": "yesterday"}, {"status.startTime": INV}),
    case(
        "completion-time-date-only",
        {"completionTime": "2025-01-02"},
        {"status.completionTime": INV},
    ),
    case("attempt-0", {"attempt": 0}, {"status.attempt": INV}),
    case("attempt-1", {"attempt": 1}, OK),
    case("attempt-string", {"attempt": "2"}, {"status.attempt": TYPE}),
    # outputs: a map of at most 64 string values
    case("outputs-64", {"outputs": {f"K{i}": "v" for i in range(64)}}, OK),
    case("outputs-65", {"outputs": {f"K{i}": "v" for i in range(65)}}, {"status.outputs": MANY}),
    case("outputs-value-number", {"outputs": {"K": 1}}, {"status.outputs.K": TYPE}),
    # artifactRefs: at most 32, each exactly one location matching its driver
    case("refs-32", {"artifactRefs": [artifact_ref(f"a{i}") for i in range(32)]}, OK),
    case(
        "refs-33",
        {"artifactRefs": [artifact_ref(f"a{i}") for i in range(33)]},
        {"status.artifactRefs": MANY},
    ),
    case("ref-s3", {"artifactRefs": [artifact_ref(driver="s3")]}, OK),
    case(
        "ref-driver-mismatch",
        {"artifactRefs": [artifact_ref(location={"s3": {"bucket": "b", "key": "k"}})]},
        {
            "status.artifactRefs[0].location.filesystem": REQ,
            "status.artifactRefs[0].location.s3": FORB,
        },
    ),
    case(
        "ref-two-locations",
        {
            "artifactRefs": [
                artifact_ref(
                    driver="s3",
                    location={"filesystem": {"path": "p"}, "s3": {"bucket": "b", "key": "k"}},
                )
            ]
        },
        {"status.artifactRefs[0].location.filesystem": FORB},
    ),
    case(
        "ref-no-location",
        {"artifactRefs": [artifact_ref(driver="s3", location={})]},
        {"status.artifactRefs[0].location.s3": REQ},
    ),
    case(
        "ref-location-unknown",
        {"artifactRefs": [artifact_ref(location={"filesystem": {"path": "p"}, "gcs": {}})]},
        {"status.artifactRefs[0].location.gcs": FORB},
    ),
    case(
        "ref-name-missing",
        {"artifactRefs": [{k: v for k, v in artifact_ref().items() if k != "name"}]},
        {"status.artifactRefs[0].name": REQ},
    ),
    # artifactStore snapshot
    case("store-snapshot", {"artifactStore": {"driver": "s3", "s3": {"bucket": "b"}}}, OK),
    case(
        "store-snapshot-mismatch",
        {"artifactStore": {"driver": "s3", "filesystem": {"volumeClaimName": "pvc"}}},
        {"status.artifactStore.s3": REQ, "status.artifactStore.filesystem": FORB},
    ),
    # conditions: Scheduled/Running/Ready/Completed, unique, metav1.Condition shape
    case(
        "conditions",
        {"conditions": [condition(t) for t in ("Scheduled", "Running", "Ready", "Completed")]},
        OK,
    ),
    case(
        "condition-type-other",
        {"conditions": [condition("Bogus")]},
        {"status.conditions[0].type": NSUP},
    ),
    case(
        "condition-duplicate",
        {"conditions": [condition(), condition()]},
        {"status.conditions[1].type": DUP},
    ),
    case(
        "condition-status",
        {"conditions": [condition(status="Yes")]},
        {"status.conditions[0].status": NSUP},
    ),
    case(
        "condition-reason",
        {"conditions": [condition(reason="not valid")]},
        {"status.conditions[0].reason": INV},
    ),
]


@pytest.fixture
def run(admin_api):
    response = admin_api.post(runs_url(), run_manifest(), format="json")
    assert response.status_code == 201, response.json()
    return response.json()


@pytest.mark.parametrize("method", ["put", "patch"])
@pytest.mark.parametrize(("status", "expected"), CASES)
def test_run_status_admission(admin_api, run, method, status, expected):
    if method == "patch":
        response = merge_patch(admin_api, STATUS_URL, {"status": status})
    else:
        response = admin_api.put(STATUS_URL, {**run, "status": status}, format="json")
    if expected is OK:
        assert response.status_code == 200, response.json()
        assert response.json()["status"] == status
    else:
        assert causes(response) == expected
        assert admin_api.get(STATUS_URL).json()["status"] == {}


def test_more_than_16_conditions_are_too_many(admin_api, run):
    conditions = [condition(t) for t in ("Scheduled", "Running", "Ready", "Completed")] * 5
    response = merge_patch(admin_api, STATUS_URL, {"status": {"conditions": conditions[:17]}})
    assert causes(response)["status.conditions"] == MANY


def test_status_feeds_the_indexed_columns(admin_api, run):
    response = merge_patch(
        admin_api,
        STATUS_URL,
        {
            "status": {
                "phase": "Running",
                "assignedPod": "runtime-bash-0",
                "assignedPodUID": UUID,
                "attempt": 2,
            }
        },
    )
    assert response.status_code == 200, response.json()
    row = Run.objects.get(name="r")
    assert (row.phase, row.assigned_pod, row.assigned_pod_uid, row.attempt) == (
        "Running",
        "runtime-bash-0",
        UUID,
        2,
    )
    assert row.generation == 1  # a status write is not a spec change
