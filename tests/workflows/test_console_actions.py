"""The console's WorkflowRun actions (Rerun, Rerun failed jobs, Cancel: buttons on the page and
list actions) and the Workflow's Submit form, for a user RBAC allows and for one it does not
(no button, and a forged POST is a 403), with the links between a run and its reruns and the
step graph."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.helpers.workflow_records import make_step_run, make_workflow, make_workflow_run
from tests.helpers.workspaces import make_workspace
from tests.workflows.test_admin import DIAMOND, messages_of, page, runtime, staff, url
from workflows.models import WorkflowRun

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures(runtime.__name__)]
__all__ = ["staff"]  # a fixture these tests use

FAILED = {
    "phase": "Failed",
    "jobs": {
        "build": {
            "phase": "Succeeded",
            "outputs": {"v": "1"},
            "steps": [{"name": "compile", "phase": "Succeeded", "runName": "old-build-compile"}],
        },
        "lint": {"phase": "Failed", "steps": [{"name": "ruff", "phase": "Failed"}]},
        "test": {"phase": "Succeeded", "steps": [{"name": "unit", "phase": "Succeeded"}]},
        "deploy": {"phase": "Skipped", "message": "needs lint, which did not succeed"},
    },
}
INPUTS = {
    "version": {"type": "string", "required": True},
    "target": {"type": "string", "default": "staging"},
}


@pytest.fixture
def client(client, admin_user):
    client.force_login(admin_user)
    return client


@pytest.fixture
def failed():
    return make_workflow_run("old", DIAMOND, status=FAILED, inputs={"version": "1.2"})


def buttons(html: str) -> set[str]:
    return set(re.findall(r'id="(wfr-[a-z-]+|workflow-submit)"', html))


def test_a_failed_run_offers_both_reruns_and_an_active_one_cancel(client, failed):
    assert buttons(page(client, url("workflowrun", "change", failed.pk))) == {
        "wfr-rerun",
        "wfr-rerun-failed",
    }
    done = make_workflow_run("done", DIAMOND, status={"phase": "Succeeded"})
    assert buttons(page(client, url("workflowrun", "change", done.pk))) == {"wfr-rerun"}
    active = make_workflow_run("active", DIAMOND, status={"phase": "Running"})
    assert buttons(page(client, url("workflowrun", "change", active.pk))) == {"wfr-cancel"}


def test_rerun_failed_jobs_creates_the_rerun_and_links_both_ways(client, failed):
    response = client.post(url("workflowrun", "rerun", failed.pk), {"failed_only": "1"})
    assert response.status_code == 302
    new = WorkflowRun.objects.exclude(pk=failed.pk).get()
    assert response["Location"] == url("workflowrun", "change", new.pk)
    assert new.name.startswith("old-rerun-")
    assert new.spec["rerunOf"] == {"name": "old", "failedJobsOnly": True, "uid": str(failed.uid)}
    assert new.spec["jobs"] == DIAMOND and new.spec["inputs"] == {"version": "1.2"}
    assert "a rerun of old (its failed jobs)" in " ".join(messages_of(response))
    html = page(client, url("workflowrun", "change", new.pk))
    assert re.search(r'Rerun of <a href="[^"]+">old</a> \(Failed\) \(failed jobs only\)', html)
    html = page(client, url("workflowrun", "change", failed.pk))
    assert f'Rerun as <a href="{url("workflowrun", "change", new.pk)}">{new.name}</a>' in html


def test_a_rerun_of_all_jobs(client, failed):
    client.post(url("workflowrun", "rerun", failed.pk))
    new = WorkflowRun.objects.exclude(pk=failed.pk).get()
    assert new.spec["rerunOf"]["failedJobsOnly"] is False


def test_a_run_still_running_is_not_rerun_and_the_page_says_why(client):
    active = make_workflow_run("active", DIAMOND, status={"phase": "Running"})
    response = client.post(url("workflowrun", "rerun", active.pk))
    assert response.status_code == 302
    assert "is still running" in " ".join(messages_of(response))
    assert WorkflowRun.objects.count() == 1


def test_cancel_button_asks_the_run_to_stop(client):
    active = make_workflow_run("active", DIAMOND, status={"phase": "Running"})
    assert client.post(url("workflowrun", "cancel", active.pk)).status_code == 302
    active.refresh_from_db()
    assert active.cancel_requested


def test_only_posts_are_served(client, failed):
    assert client.get(url("workflowrun", "rerun", failed.pk)).status_code == 405


def test_a_post_without_the_csrf_token_is_refused(admin_user, failed):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin_user)
    assert browser.post(url("workflowrun", "rerun", failed.pk)).status_code == 403
    assert WorkflowRun.objects.count() == 1


def test_the_list_reruns_the_selected_runs(client, failed):
    html = page(client, url("workflowrun", "changelist"))
    assert 'value="rerun_workflow_runs"' in html and 'value="rerun_failed_jobs"' in html
    response = client.post(
        url("workflowrun", "changelist"),
        {"action": "rerun_failed_jobs", "_selected_action": [str(failed.pk)]},
    )
    assert response.status_code == 302
    new = WorkflowRun.objects.exclude(pk=failed.pk).get()
    assert f"Rerun default/old as {new.name}." in messages_of(response)


def test_a_reader_sees_no_button_and_a_forged_post_is_a_403(client, staff, failed):
    """bob may get and list WorkflowRuns (RBAC's view), not create or patch them."""
    client.force_login(staff)
    assert buttons(page(client, url("workflowrun", "change", failed.pk))) == set()
    html = page(client, url("workflowrun", "changelist"))
    assert "rerun_workflow_runs" not in html
    assert client.post(url("workflowrun", "rerun", failed.pk)).status_code == 403
    active = make_workflow_run("active", DIAMOND, status={"phase": "Running"})
    assert client.post(url("workflowrun", "cancel", active.pk)).status_code == 403
    assert (
        WorkflowRun.objects.count() == 2
        and not WorkflowRun.objects.get(pk=active.pk).cancel_requested
    )
    workflow = make_workflow("release", DIAMOND, inputs=INPUTS)
    assert "workflow-submit" not in page(client, url("workflow", "change", workflow.pk))
    assert client.get(url("workflow", "submit", workflow.pk)).status_code == 403
    assert client.post(url("workflow", "submit", workflow.pk), {"version": "1"}).status_code == 403


# ------------------------------------------------------------------------------ Submit


def test_the_submit_form_has_the_inputs_defaults_and_required_marks(client):
    workflow = make_workflow("release", DIAMOND, inputs=INPUTS)
    html = page(client, url("workflow", "change", workflow.pk))
    assert f'href="{url("workflow", "submit", workflow.pk)}"' in html
    form = page(client, url("workflow", "submit", workflow.pk))
    assert re.search(r'<label for="id_version" class="required">version \*</label>', form)
    assert re.search(r'<input[^>]*name="target"[^>]*value="staging"', form)
    assert 'name="csrfmiddlewaretoken"' in form


def test_a_missing_required_input_is_a_field_error_and_creates_nothing(client):
    workflow = make_workflow("release", DIAMOND, inputs=INPUTS)
    response = client.post(url("workflow", "submit", workflow.pk), {"target": "prod"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "The Workflow requires the input version." in html
    assert not WorkflowRun.objects.exists()


def test_submit_starts_the_workflow_and_shows_the_run(client):
    workflow = make_workflow("release", DIAMOND, inputs=INPUTS)
    response = client.post(url("workflow", "submit", workflow.pk), {"version": "2.0", "target": ""})
    assert response.status_code == 302
    run = WorkflowRun.objects.get()
    assert response["Location"] == url("workflowrun", "change", run.pk)
    assert run.workflow == "release" and run.name.startswith("release-")
    assert run.spec["inputs"] == {"version": "2.0", "target": ""}
    assert run.spec["jobs"] == DIAMOND


def test_the_add_form_starts_from_a_workflow_of_the_filtered_namespace(client):
    make_workflow("release", DIAMOND, inputs=INPUTS)
    html = page(client, url("workflowrun", "add") + "?namespace=default")
    assert "workflowRef:" in html and "name: release" in html and "target: staging" in html


# ------------------------------------------------------------------------------ step graph


def test_the_step_graph_shows_each_step_with_its_phase_and_run(client):
    run = make_workflow_run(
        "r",
        DIAMOND,
        status={
            "phase": "Running",
            "jobs": {
                "build": {
                    "phase": "Running",
                    "steps": [
                        {"name": "compile", "phase": "Succeeded", "runName": "r-build-compile"},
                        {"name": "package", "phase": "Running", "runName": "r-build-package"},
                    ],
                },
            },
        },
    )
    compile_run = make_step_run(
        run,
        "build",
        "compile",
        status={
            "phase": "Succeeded",
            "startTime": "2026-01-01T00:00:00Z",
            "completionTime": "2026-01-01T00:00:07Z",
        },
    )
    make_step_run(run, "build", "package", status={"phase": "Running"})
    html = page(client, url("workflowrun", "change", run.pk))
    nodes = dict(
        re.findall(
            r'class="k-step-node" data-job="build" data-step="([^"]+)" data-phase="(\w+)"', html
        )
    )
    assert nodes == {"compile": "Succeeded", "package": "Running"}
    run_page = f"/admin/scheduling/run/{compile_run.pk}/change/"
    assert f'<a href="{run_page}" class="k-step-run">' in html
    assert f'<a href="{run_page}#run-log" class="k-step-log">' in html
    assert '<span class="k-step-time">7s</span>' in html
    groups = re.findall(r'class="k-job-group" data-job="(\w+)" data-phase="(\w+)"', html)
    assert ("deploy", "Pending") in groups


# ------------------------------------------------------------------------------ read-only, TTL


def test_a_finished_run_has_no_save_button_and_an_active_one_does(client, failed):
    html = page(client, url("workflowrun", "change", failed.pk))
    assert 'name="_save"' not in html and "wfr-rerun" in html
    active = make_workflow_run("active", DIAMOND, status={"phase": "Running"})
    assert 'name="_save"' in page(client, url("workflowrun", "change", active.pk))
    response = client.post(url("workflowrun", "change", failed.pk), {"manifest": "x"})
    assert response.status_code == 403


def test_the_job_workspaces_and_how_long_they_are_kept(client):
    run = make_workflow_run("r", DIAMOND, status={"phase": "Running"})
    used = make_workspace(
        "r-build", labels={"kruntimes.io/workflow-job": "build"}, ttlSecondsAfterUnused=600
    )
    used.status = {**(used.status or {}), "lastUsedTime": "2026-01-01T00:00:00Z"}
    used.sync_columns()
    used.save()
    busy = make_workspace(
        "r-test", labels={"kruntimes.io/workflow-job": "test"}, ttlSecondsAfterUnused=60
    )
    make_workspace("stranger", labels={"kruntimes.io/workflow-job": "lint"})
    children = [
        {"kind": "PersistentWorkspace", "name": w.name, "uid": str(w.uid)} for w in (used, busy)
    ]
    run.status = {"phase": "Running", "children": children}
    run.save()
    html = page(client, url("workflowrun", "change", run.pk))
    assert "600s after its last use: until 2026-01-01T00:10:00Z" in html
    assert '60s <span class="k-muted">after its last use (in use)</span>' in html
    assert "stranger" not in html
