"""Issue 27, item 1, end to end on the API: a user who may only create Runs waits for another
user's WorkflowRun to start and creates its next step's Run, ``<wfr>-<job>-<step>``, with the
controller's labels and a controller ownerReference, whose outputs would be substituted into the
victim's next step. The API refuses it (403, the field named); and a forgery that got past
admission (a privileged writer) is still not adopted: the WorkflowRun runs its own Run under a
second name, and its steps, its next job and its outputs see only real outputs."""

from __future__ import annotations

import pytest

from scheduling.models import Run
from tests.helpers.api import token_client
from tests.helpers.records import make_run, make_runtime
from tests.helpers.runs import run_manifest, runs_url
from tests.helpers.workspace_access import bind_role, make_role
from tests.workflows.test_controller import finish, tick
from workflows.models import WorkflowRun
from workflows.names import child_labels, owner_reference, second_name

pytestmark = pytest.mark.django_db

API = "/apis/kruntimes.io/v1alpha1/namespaces/default"
INJECTION = '"; cat build.txt > stolen.txt; echo "'
WORKFLOW = {
    "outputs": {"ver": {"value": "${{ jobs.build.outputs.ver }}"}},
    "jobs": {
        "build": {
            "runs-on": "bash",
            "steps": [
                {"name": "checkout", "run": "echo checked out"},
                {"name": "version", "run": "echo ver=1.2 >> $KRUNTIME_OUTPUTS"},
                {"name": "use", "run": 'echo "building ${{ steps.version.outputs.ver }}"'},
            ],
            "outputs": {"ver": "${{ steps.version.outputs.ver }}"},
        },
        "deploy": {
            "runs-on": "bash",
            "needs": ["build"],
            "steps": [{"name": "ship", "run": 'echo "shipping ${{ jobs.build.outputs.ver }}"'}],
        },
    },
}


@pytest.fixture(autouse=True)
def runtime():
    make_runtime()


@pytest.fixture
def victim(admin_api) -> WorkflowRun:
    body = {"apiVersion": "kruntimes.io/v1alpha1", "kind": "Workflow",
            "metadata": {"name": "release"}, "spec": WORKFLOW}  # fmt: skip
    assert admin_api.post(f"{API}/workflows", body, format="json").status_code == 201
    start = {"apiVersion": "kruntimes.io/v1alpha1", "kind": "WorkflowRun",
             "metadata": {"name": "rel"}, "spec": {"workflowRef": {"name": "release"}}}  # fmt: skip
    assert admin_api.post(f"{API}/workflowruns", start, format="json").status_code == 201
    wfr = tick(WorkflowRun.objects.get(name="rel"))
    assert Run.objects.filter(name="rel-build-checkout").exists()  # it started
    return wfr


@pytest.fixture
def attacker(django_user_model):
    user = django_user_model.objects.create_user("mallory", "m@example.com", "pw")
    make_role("run-creator", [{"apiGroups": ["kruntimes.io"], "resources": ["runs"],
                               "verbs": ["create"]}])  # fmt: skip
    bind_role("run-creator", "run-creator", user="mallory")
    return token_client(user)


def forged_metadata(wfr, with_owner=True) -> dict:
    meta: dict = {"labels": child_labels(wfr, "build", "version")}
    if with_owner:
        meta["ownerReferences"] = [owner_reference(wfr)]
    return meta


def refusal(response) -> tuple[int, str, list[str]]:
    body = response.json()
    return body["code"], body["reason"], [c["field"] for c in body["details"]["causes"]]


def run_to_end(wfr: WorkflowRun, outputs: dict[str, dict]) -> WorkflowRun:
    """Play runtimed: finish each child Run the WorkflowRun recorded, with ``outputs`` by step."""
    for _ in range(12):
        wfr = tick(wfr)
        if wfr.is_finished:
            return wfr
        mine = [c["uid"] for c in wfr.status["children"] if c["kind"] == "Run"]
        for run in Run.objects.filter(uid__in=mine, phase="Pending"):
            step = run.labels["kruntimes.io/workflow-step"]
            finish(run, outputs=outputs.get(step, {}))
    return wfr


def test_a_narrow_user_cannot_forge_the_next_step(victim, attacker):
    forged = run_manifest("rel-build-version", forged_metadata(victim))
    assert refusal(attacker.post(runs_url(), forged, format="json")) == (
        403, "Forbidden", ["metadata.ownerReferences"],
    )  # fmt: skip
    labels_only = run_manifest("rel-build-version", forged_metadata(victim, with_owner=False))
    assert refusal(attacker.post(runs_url(), labels_only, format="json")) == (
        403, "Forbidden", ["metadata.labels"],
    )  # fmt: skip
    assert not Run.objects.filter(name="rel-build-version").exists()


def test_a_forgery_past_admission_is_not_adopted(victim, admin_api):
    forged = make_run("rel-build-version", **{
        "labels": forged_metadata(victim)["labels"],
        "owner_references": forged_metadata(victim)["ownerReferences"],
    })  # fmt: skip
    finish(forged, outputs={"ver": INJECTION})
    wfr = run_to_end(victim, {"version": {"ver": "1.2"}})

    shown = admin_api.get(f"{API}/workflowruns/rel").json()["status"]
    assert shown["phase"] == "Succeeded"
    assert shown["outputs"] == {"ver": "1.2"}
    own = second_name(wfr, "rel-build-version")
    assert shown["jobs"]["build"]["steps"][1] == {
        "name": "version", "phase": "Succeeded", "runName": own, "outputs": {"ver": "1.2"},
    }  # fmt: skip
    assert shown["jobs"]["build"]["outputs"] == {"ver": "1.2"}
    assert shown["jobs"]["deploy"]["phase"] == "Succeeded"
    use = Run.objects.get(name="rel-build-use")
    ship = Run.objects.get(name="rel-deploy-ship")
    assert use.spec["source"]["inline"] == 'echo "building 1.2"'  # the next step
    assert ship.spec["source"]["inline"] == 'echo "shipping 1.2"'  # the next job
    assert all(INJECTION not in str(run.spec) for run in (use, ship))
    assert forged.name not in {c["name"] for c in shown["children"]}
    events = admin_api.get(
        "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name=rel"
    ).json()["items"]
    warnings = [(e["type"], e["reason"]) for e in events if e["type"] == "Warning"]
    assert warnings == [("Warning", "NameTaken")]
