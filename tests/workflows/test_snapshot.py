"""What the workflow controller reports and keeps as a WorkflowRun starts (kruntimes'
``JobStatus.pre`` and ``status.snapshotName``): each job's direct needs, sorted; and one
immutable apps/v1 ControllerRevision, owned by the run and recorded by UID, holding the
definitions the run resolved at its start, which is what it runs from."""

from __future__ import annotations

import hashlib

import pytest
from django.utils import timezone

from portal import tasks
from portal.machinery import gc_queue, store, workqueue
from portal.models import ControllerRevision
from tests.helpers.operator import OPERATOR
from tests.helpers.rbac import ALICE, bind_cluster_role
from tests.helpers.runs import merge_patch
from tests.helpers.workflows import started_run_manifest
from tests.workflows.test_controller import child, finish, job, kind, make, settle, start, step
from workflows import controller, snapshots
from workflows.models import WorkflowRun
from workflows.names import child_labels, owner_reference, second_name

pytestmark = pytest.mark.django_db

REVISIONS = "/apis/apps/v1/namespaces/default/controllerrevisions"
RUNS = "/apis/kruntimes.io/v1alpha1/namespaces/default/workflowruns"


@pytest.fixture(autouse=True)
def runtime():
    from tests.helpers.records import make_runtime

    make_runtime()


def revisions_of(wfr) -> list[ControllerRevision]:
    return list(
        ControllerRevision.objects.filter(**{"labels__kruntimes.io/workflowrun-uid": str(wfr.uid)})
    )


# --- pre --------------------------------------------------------------------------------


def test_pre_is_each_jobs_direct_needs_sorted():
    wfr = settle(
        start(
            {
                "build": job(step("s")),
                "lint": job(step("s")),
                "test": job(step("s"), needs=["lint", "build"]),
                "deploy": job(step("s"), needs=["test"]),
            }
        )
    )
    jobs = wfr.status["jobs"]
    assert "pre" not in jobs["build"] and "pre" not in jobs["lint"]
    assert jobs["test"]["pre"] == ["build", "lint"]
    assert jobs["deploy"]["pre"] == ["test"]  # direct needs only, as kruntimes resolves them
    assert jobs["deploy"]["phase"] == "Pending"


def test_pre_stays_on_finished_and_skipped_jobs():
    wfr = settle(start({"a": job(step("s")), "b": job(step("s"), needs=["a"])}))
    finish(child(wfr, "a", "s"), "Failed", reason="RuntimeExecute")
    wfr = settle(wfr)
    assert wfr.status["jobs"]["b"] == {**wfr.status["jobs"]["b"], "phase": "Skipped", "pre": ["a"]}


# --- the snapshot -----------------------------------------------------------------------


def test_a_run_gets_one_snapshot_of_what_it_runs_named_in_its_status():
    wfr = settle(start({"a": job(step("s", "echo ${{ inputs.who }}"))}, inputs={"who": "me"}), 6)
    (revision,) = revisions_of(wfr)
    digest = hashlib.sha256(str(wfr.uid).encode()).hexdigest()[:10]
    assert revision.name == wfr.status["snapshotName"] == f"wfr-snapshot-{digest}"
    assert revision.revision == 1
    assert revision.owner_references == [owner_reference(wfr)]
    assert revision.data["spec"] == {
        "inputs": {"who": "me"},
        "jobs": wfr.spec["jobs"],
    }
    entry = {"kind": "ControllerRevision", "name": revision.name, "uid": str(revision.uid)}
    assert wfr.status["children"][0] == entry  # made first, recorded by UID


def test_a_long_run_name_is_cut_to_fit_the_snapshot_name():
    wfr = start({"a": job(step("s"))}, name="w" * 253)
    assert len(snapshots.snapshot_name(wfr)) == 253
    assert snapshots.snapshot_name(wfr).startswith("w" * 233 + "-snapshot-")


def test_later_changes_to_workflows_and_actions_do_not_reach_a_started_run():
    make("Action", "greet", {"steps": [step("speak", "echo old action")]})
    make("Workflow", "lib", {"jobs": {"inner": job(step("go", "echo old lib"))}})
    jobs = {
        "build": job({"name": "hello", "uses": "greet"}),
        "call": {"uses": "lib", "needs": ["build"]},
    }
    make("Workflow", "ci", {"jobs": jobs})
    wfr = store.create(
        kind("WorkflowRun"), started_run_manifest("ci"), namespace="default", context=OPERATOR
    )
    wfr = settle(wfr)
    (revision,) = revisions_of(wfr)
    before = revision.data
    changes = (
        ("Action", "greet", {"steps": [step("speak", "echo new action")]}),
        ("Workflow", "lib", {"jobs": {"inner": job(step("go", "echo new lib"))}}),
        ("Workflow", "ci", {"jobs": {"build": job(step("other"))}}),
    )
    for kind_name, name, spec in changes:
        store.patch(kind(kind_name), "default", name, {"spec": spec}, context=OPERATOR)
    wfr = settle(wfr)
    assert ControllerRevision.objects.get(pk=revision.pk).data == before
    speak = child(wfr, "build", "hello", "speak")
    assert speak.spec["source"]["inline"] == "echo old action"
    finish(speak)
    wfr = settle(wfr)
    called = WorkflowRun.objects.get(name=wfr.status["jobs"]["call"]["workflowRunName"])
    assert called.spec["jobs"]["inner"]["steps"][0]["run"] == "echo old lib"
    assert before["workflows"]["call"]["name"] == "lib"
    assert before["actions"]["build"]["hello"]["name"] == "greet"


def test_an_action_that_did_not_exist_at_the_start_is_not_found_later():
    wfr = settle(start({"build": job({"name": "hello", "uses": "greet"})}))
    make("Action", "greet", {"steps": [step("speak")]})
    wfr = settle(wfr)
    assert wfr.phase == "Failed"
    assert 'Action "greet" not found' in wfr.status["jobs"]["build"]["message"]


def test_a_revision_a_stranger_holds_under_the_name_is_not_used():
    wfr = start({"a": job(step("s", "echo mine"))})
    first = snapshots.snapshot_name(wfr)
    ControllerRevision.objects.create(
        name=first, namespace="default", revision=1,
        labels=child_labels(wfr, "a"), owner_references=[owner_reference(wfr)],
        data={"spec": {"jobs": {"a": job(step("s", "echo forged"))}}},
    )  # fmt: skip
    wfr = settle(wfr)
    assert wfr.status["snapshotName"] == second_name(wfr, first)
    assert child(wfr, "a", "s").spec["source"]["inline"] == "echo mine"


def test_definitions_beyond_a_mebibyte_fail_the_run_before_anything_is_made(monkeypatch):
    monkeypatch.setattr(snapshots, "MAX_BYTES", 64)
    wfr = settle(start({"a": job(step("s"))}))
    assert wfr.phase == "Failed"
    assert "byte limit" in wfr.status["message"]
    assert not revisions_of(wfr) and child(wfr, "a", "s") is None


def test_a_run_whose_snapshot_is_gone_fails_rather_than_resolve_again():
    wfr = settle(start({"a": job(step("s"), step("t"))}))
    ControllerRevision.objects.filter(name=wfr.status["snapshotName"]).delete()
    finish(child(wfr, "a", "s"))
    wfr = settle(wfr)
    assert wfr.phase == "Failed"
    assert wfr.status["message"].endswith("of what this WorkflowRun runs is gone")
    assert not revisions_of(wfr) and child(wfr, "a", "t") is None


def test_the_snapshot_is_made_once_even_when_passes_repeat():
    wfr = settle(start({"a": job(step("s"))}))
    for _ in range(3):
        controller.reconcile(WorkflowRun.objects.get(pk=wfr.pk), timezone.now())
    assert len(revisions_of(wfr)) == 1


# --- through the API --------------------------------------------------------------------


@pytest.fixture
def finished():
    wfr = settle(start({"build": job(step("s")), "test": job(step("t"), needs=["build"])}))
    finish(child(wfr, "build", "s"))
    wfr = settle(wfr)
    finish(child(wfr, "test", "t"))
    wfr = settle(wfr)
    assert wfr.phase == "Succeeded"
    return wfr


def test_a_finished_run_shows_pre_and_its_snapshot(admin_api, finished):
    status = admin_api.get(f"{RUNS}/wfr").json()["status"]
    assert status["jobs"]["test"]["pre"] == ["build"]
    response = admin_api.get(f"{REVISIONS}/{status['snapshotName']}")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["apiVersion"] == "apps/v1" and body["kind"] == "ControllerRevision"
    assert body["revision"] == 1
    assert body["data"]["spec"]["jobs"]["test"]["needs"] == ["build"]
    assert body["metadata"]["ownerReferences"][0]["uid"] == str(finished.uid)


def test_the_snapshots_data_is_immutable(admin_api, finished):
    url = f"{REVISIONS}/{finished.status['snapshotName']}"
    response = merge_patch(admin_api, url, {"data": {"spec": {"inputs": {"who": "else"}}}})
    assert response.status_code == 422, response.json()
    assert [c["field"] for c in response.json()["details"]["causes"]] == ["data"]
    assert merge_patch(admin_api, url, {"metadata": {"labels": {"x": "y"}}}).status_code == 200


def test_a_user_who_may_read_the_run_reads_its_snapshot_and_may_not_write_one(
    admin_api, user_api, finished
):
    bind_cluster_role(admin_api, "alice-edit", "edit", ALICE)
    name = finished.status["snapshotName"]
    assert user_api.get(f"{RUNS}/wfr").status_code == 200
    assert user_api.get(f"{REVISIONS}/{name}").status_code == 200
    assert user_api.get(REVISIONS).status_code == 200
    manifest = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "x"}}
    assert user_api.post(REVISIONS, {**manifest, "data": {}}, format="json").status_code == 403
    assert user_api.delete(f"{REVISIONS}/{name}").status_code == 403


def test_the_snapshot_goes_with_its_run(finished):
    name = finished.status["snapshotName"]
    store.delete(kind("WorkflowRun"), "default", "wfr", context=OPERATOR)
    tasks.garbage_collect()
    workqueue.process(gc_queue.QUEUE)
    assert not WorkflowRun.objects.filter(name="wfr").exists()
    assert not ControllerRevision.objects.filter(name=name).exists()


def test_the_admin_links_a_runs_snapshot_and_shows_its_data(admin_client, finished):
    from django.urls import reverse

    revision = ControllerRevision.objects.get(name=finished.status["snapshotName"])
    run_page = admin_client.get(reverse("admin:workflows_workflowrun_change", args=[finished.pk]))
    revision_url = reverse("admin:portal_controllerrevision_change", args=[revision.pk])
    assert revision_url in run_page.content.decode()
    page = admin_client.get(revision_url)
    assert page.status_code == 200
    assert "needs:" in page.content.decode() and "runs-on: bash" in page.content.decode()
