"""WorkflowRun status ``jobs.<job>.pre`` (the job's resolved predecessors: at most 64 names of
at most 63 characters) and ``snapshotName`` (at most 253 characters), as kruntimes'
``workflowrun_types.go`` bounds them, on status writes through the API."""

from __future__ import annotations

import pytest

from tests.helpers.runs import merge_patch
from tests.helpers.workflows import build_deploy_jobs, causes_of, url, workflow_run_manifest

pytestmark = pytest.mark.django_db


def post(api, manifest):
    return api.post(url("workflowruns"), manifest, format="json")


def status_patch(api, status):
    return merge_patch(api, url("workflowruns", name="wfr") + "/status", {"status": status})


def job_status(**fields) -> dict:
    return {"jobs": {"deploy": {"phase": "Pending", **fields}}}


@pytest.fixture
def wfr(admin_api):
    assert post(admin_api, workflow_run_manifest(jobs=build_deploy_jobs())).status_code == 201


@pytest.mark.parametrize(
    "status",
    [
        job_status(pre=[f"j{n}" for n in range(64)]),
        job_status(pre=["b" * 63]),
        job_status(pre=[]),
        job_status(pre=[""]),  # kruntimes bounds only the length
        {"snapshotName": "s" * 253},
        {"snapshotName": ""},
    ],
    ids=["64-names", "63-chars", "empty", "blank-name", "253-chars", "blank"],
)
def test_pre_and_snapshot_name_at_their_limits_are_accepted(admin_api, wfr, status):
    response = status_patch(admin_api, status)
    assert response.status_code == 200, response.json()
    body = response.json()["status"]
    if "jobs" in status:
        assert body["jobs"]["deploy"]["pre"] == status["jobs"]["deploy"]["pre"]
    else:
        assert body["snapshotName"] == status["snapshotName"]


@pytest.mark.parametrize(
    "status, field",
    [
        (job_status(pre=[f"j{n}" for n in range(65)]), "status.jobs.deploy.pre"),
        (job_status(pre=["build", "b" * 64]), "status.jobs.deploy.pre[1]"),
        (job_status(pre="build"), "status.jobs.deploy.pre"),
        ({"snapshotName": "s" * 254}, "status.snapshotName"),
        ({"snapshotName": 7}, "status.snapshotName"),
    ],
    ids=["65-names", "64-chars", "not-a-list", "254-chars", "not-a-string"],
)
def test_pre_and_snapshot_name_beyond_their_limits_are_a_422_at_the_field(
    admin_api, wfr, status, field
):
    response = status_patch(admin_api, status)
    assert response.status_code == 422, response.json()
    assert field in causes_of(response)


def test_other_unknown_status_fields_are_still_refused(admin_api, wfr):
    response = status_patch(admin_api, {"snapshot": "x", **job_status(pres=["build"])})
    assert response.status_code == 422
    assert {"status.snapshot", "status.jobs.deploy.pres"} <= set(causes_of(response))
