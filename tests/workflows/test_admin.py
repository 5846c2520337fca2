"""The workflows admin: WorkflowRun list and detail (job graph, steps with their Runs and logs,
artifacts, refresh while active), Cancel as the logged-in user, Workflow and Action pages."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from scheduling.admin.run_artifacts import download_url
from scheduling.models import Run
from tests.helpers.rbac import bind_role
from tests.helpers.records import make_run, make_runtime
from tests.helpers.workflow_records import (
    make_action,
    make_step_run,
    make_workflow,
    make_workflow_run,
    set_status,
)
from workflows.graph import PHASE_COLOURS
from workflows.models import WorkflowRun

pytestmark = pytest.mark.django_db

LIVE = 'data-active="1"'  # portal/live.js follows the run (its watch and its Runs' watch)
DIAMOND = {
    "build": {
        "runs-on": "bash",
        "steps": [{"name": "compile", "run": "make"}, {"name": "package", "run": "tar czf d ."}],
    },
    "lint": {"runs-on": "bash", "needs": ["build"], "steps": [{"name": "ruff", "run": "ruff"}]},
    "test": {"runs-on": "bash", "needs": ["build"], "steps": [{"name": "unit", "run": "pytest"}]},
    "deploy": {
        "runs-on": "bash",
        "needs": ["lint", "test"],
        "steps": [{"name": "ship", "run": "deploy"}],
    },
}


@pytest.fixture(autouse=True)
def runtime():
    make_runtime()


@pytest.fixture
def client(client, admin_user):
    client.force_login(admin_user)
    return client


BOB = [{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}]


@pytest.fixture
def staff(django_user_model, admin_api):
    """bob: staff with Django's permissions on the workflows models, and RBAC's read-only
    ``view`` in default (the admin lists what RBAC lets him list; he may change nothing)."""
    bob = django_user_model.objects.create_user("bob", "bob@example.com", "pw", is_staff=True)
    bob.user_permissions.add(*Permission.objects.filter(content_type__app_label="workflows"))
    bind_role(admin_api, "bob-view", "ClusterRole", "view", BOB, namespace="default")
    return bob


def url(model, view, *args):
    return reverse(f"admin:workflows_{model}_{view}", args=args)


def run_url(run, view="change"):
    return reverse(f"admin:scheduling_run_{view}", args=[run.pk])


def names(response):
    assert response.status_code == 200
    return sorted(obj.name for obj in response.context["cl"].result_list)


def messages_of(response):
    return [str(m) for m in get_messages(response.wsgi_request)]


def page(client, path):
    response = client.get(path)
    assert response.status_code == 200
    return response.content.decode()


def svg_nodes(html):
    """job -> phase of each node of the page's job graph."""
    svg = re.search(r'<svg [^>]*class="k-graph".*?</svg>', html, re.S)
    assert svg, "no job graph on the page"
    return dict(re.findall(r'class="k-node" data-job="([^"]*)" data-phase="([^"]*)"', svg[0]))


def ref(run: Run, name: str) -> dict:
    return {
        "name": name,
        "driver": "filesystem",
        "type": "file",
        "location": {
            "filesystem": {
                "volumeClaimName": "artifacts",
                "path": f"namespaces/{run.namespace}/runs/{run.uid}/{name}",
            }
        },
        "sizeBytes": 2048,
        "digest": "sha256:" + "ab" * 32,
        "contentType": "application/gzip",
        "createdAt": "2026-01-01T00:00:00Z",
    }


def diamond_run(name="release-1", *, phase="Running", workflow="release", **extra):
    """A WorkflowRun of DIAMOND: build done (with outputs and an artifact), lint running,
    test waiting, deploy pending; its child Runs as the controller would have created them."""
    wr = make_workflow_run(
        name, DIAMOND, workflow=workflow, inputs={"version": "1.2"}, status={"phase": phase}
    )
    compile_run = make_step_run(wr, "build", "compile", status={"phase": "Succeeded"})
    package_run = make_step_run(wr, "build", "package", status={"phase": "Succeeded"})
    ruff_run = make_step_run(wr, "lint", "ruff", status={"phase": "Running"})
    start = timezone.now() - timedelta(minutes=5)
    status = {
        "phase": phase,
        "startTime": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "message": "2 of 4 jobs are running",
        "outputs": {"image": "registry/app:1.2"},
        "conditions": [
            {
                "type": "Ready",
                "status": "False",
                "reason": "JobsRunning",
                "message": "lint is running",
                "lastTransitionTime": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        ],
        "jobs": {
            "build": {
                "phase": "Succeeded",
                "outputs": {"version": "1.2.0"},
                "artifacts": {"dist": ref(package_run, "dist")},
                "steps": [
                    {
                        "name": "compile",
                        "phase": "Succeeded",
                        "runName": compile_run.name,
                        "outputs": {"binary": "app"},
                    },
                    {"name": "package", "phase": "Succeeded", "runName": package_run.name},
                ],
            },
            "lint": {"phase": "Running", "steps": [{"name": "ruff", "phase": "Running"}]},
            "test": {"phase": "Waiting"},
            "deploy": {"phase": "Pending"},
        },
        **extra,
    }
    wr = set_status(wr, status)
    return wr, {"compile": compile_run, "package": package_run, "ruff": ruff_run}


# ------------------------------------------------------------------------------ list


def test_list_shows_phase_workflow_link_jobs_summary_started_and_duration(client):
    workflow = make_workflow("release", DIAMOND)
    diamond_run()
    make_workflow_run("orphan", {"a": {}}, workflow="gone", status={"phase": "Failed"})
    make_workflow_run("inline", {}, status={"phase": "Pending"})
    html = page(client, url("workflowrun", "changelist"))
    assert "release-1" in html and "orphan" in html
    assert f'<a href="{url("workflow", "change", workflow.pk)}">release</a>' in html
    assert "gone <span" in html and "(not found)" in html
    assert ">inline</span>" in html
    assert 'k-badge k-ok" title="">Running<' in html
    assert 'k-badge k-bad" title="">Failed<' in html
    assert "1/4 jobs succeeded" in html and "0/1 jobs succeeded" in html
    row = re.search(r"<tr>(?:(?!</tr>).)*release-1(?:(?!</tr>).)*</tr>", html, re.S)[0]
    started = re.search(r'<td class="field-started_cell"><span title="[^"]*">([^<]*)</span>', row)
    assert started and started[1] in ("5m ago", "5m1s ago", "5m2s ago")
    assert re.search(r"5m(\ds)? <span class=\"k-muted\">so far</span>", row)
    assert "2 of 4 jobs are running" in html


def test_list_duration_of_a_finished_run_ends_at_its_completion(client):
    start = timezone.now() - timedelta(hours=1)
    make_workflow_run(
        "done",
        {"a": {}},
        status={
            "phase": "Succeeded",
            "startTime": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "completionTime": (start + timedelta(seconds=90)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "jobs": {"a": {"phase": "Succeeded"}},
        },
    )
    html = page(client, url("workflowrun", "changelist"))
    assert '<td class="field-duration_cell"><span title="' in html and ">90s</span>" in html
    assert "so far" not in html
    assert "1/1 jobs succeeded" in html


def test_filters_and_search(client):
    first, _ = diamond_run("release-1", workflow="release")
    make_workflow_run("nightly-1", {"a": {}}, workflow="nightly", status={"phase": "Failed"})
    make_workflow_run(
        "other-ns", {"a": {}}, namespace="team", workflow="nightly", status={"phase": "Failed"}
    )
    listed = lambda query: names(client.get(url("workflowrun", "changelist") + query))  # noqa: E731
    assert listed("") == ["nightly-1", "other-ns", "release-1"]
    assert listed("?namespace=team") == ["other-ns"]
    assert listed("?phase__exact=Failed") == ["nightly-1", "other-ns"]
    assert listed("?workflow=release") == ["release-1"]
    assert listed("?workflow=nightly&namespace=default") == ["nightly-1"]
    assert listed("?q=nightly") == ["nightly-1", "other-ns"]  # name and workflow
    assert listed(f"?q={first.uid}") == ["release-1"]
    assert listed(f"?q={str(first.uid)[:8]}") == ["release-1"]
    html = page(client, url("workflowrun", "changelist"))
    assert "By workflow" in html or "workflow</h3>" in html


def test_list_query_count_does_not_grow_with_rows(client):
    make_workflow("release", DIAMOND)
    make_workflow_run("r0", DIAMOND, workflow="release", status={"phase": "Running"})
    with CaptureQueriesContext(connection) as one:
        page(client, url("workflowrun", "changelist"))
    for index in range(1, 6):
        if index % 2:  # some runs' Workflows exist, some do not
            make_workflow(f"wf{index}", {"a": {}})
        make_workflow_run(f"r{index}", DIAMOND, workflow=f"wf{index}", status={"phase": "Running"})
    with CaptureQueriesContext(connection) as six:
        page(client, url("workflowrun", "changelist"))
    assert len(six) == len(one)


# ------------------------------------------------------------------------------ detail


def test_detail_draws_the_job_graph_with_each_jobs_phase(client):
    wr, _ = diamond_run()
    html = page(client, url("workflowrun", "change", wr.pk))
    assert svg_nodes(html) == {
        "build": "Succeeded",
        "lint": "Running",
        "test": "Waiting",
        "deploy": "Pending",
    }
    svg = re.search(r'<svg [^>]*class="k-graph".*?</svg>', html, re.S)[0]
    for phase in ("Succeeded", "Running", "Waiting", "Pending"):
        assert PHASE_COLOURS[phase][0] in svg
    edges = set(re.findall(r'data-from="([^"]*)" data-to="([^"]*)"', svg))
    assert edges == {("build", "lint"), ("build", "test"), ("lint", "deploy"), ("test", "deploy")}
    # each node links to its job's section
    for anchor in re.findall(r'<a href="#(job-\d+)" class="k-node"', svg):
        assert f'id="{anchor}"' in html
    assert "1/4 jobs succeeded" in html


def test_detail_steps_link_their_runs_and_logs(client):
    wr, runs = diamond_run()
    html = page(client, url("workflowrun", "change", wr.pk))
    for key in ("compile", "package"):
        run = runs[key]
        assert f'<a href="{run_url(run)}" class="k-run-link">{run.name}</a>' in html
        assert f'<a href="{run_url(run)}#run-log" class="k-log-link">log</a>' in html
        assert f"{run_url(run, 'log_download')}?attempt=1" in html
    # a step whose runName the status has not written yet: found by the workflow labels
    assert f'<a href="{run_url(runs["ruff"])}" class="k-run-link">' in html
    assert "<code>binary</code>=" in html and ">app</span>" in html  # step outputs
    assert "<code>version</code>" in html and "1.2.0" in html  # job outputs
    assert "runs on</span> <code>bash</code>" in html
    assert "needs</span> <code>lint</code> <code>test</code>" in html


def test_detail_step_without_a_run_says_so(client):
    wr = make_workflow_run(
        "w",
        {"a": {"steps": [{"name": "one"}, {"name": "two"}]}},
        status={
            "phase": "Running",
            "jobs": {
                "a": {
                    "phase": "Running",
                    "steps": [
                        {"name": "one", "phase": "Running", "runName": "w-a-one-gone"},
                        {"name": "two", "phase": "Pending"},
                    ],
                }
            },
        },
    )
    html = page(client, url("workflowrun", "change", wr.pk))
    assert "w-a-one-gone <span" in html and "(not found)" in html
    assert "not created yet" in html
    assert "k-run-link" not in html


def test_detail_links_artifacts_to_their_download_from_the_producing_run(client):
    wr, runs = diamond_run()
    html = page(client, url("workflowrun", "change", wr.pk))
    package = runs["package"]
    download = download_url(package, "dist")
    assert f'<a href="{download}" class="k-artifact-link"' in html
    assert f'title="from the store of Run {package.name}">download</a>' in html
    assert "2.0\xa0KB" in html or "2.0 KB" in html
    assert f"artifacts:namespaces/default/runs/{package.uid}/dist" in html


def test_detail_shows_inputs_outputs_message_and_conditions(client):
    workflow = make_workflow("release", DIAMOND)
    wr, _ = diamond_run()
    wr.spec["outputs"] = {"image": "${{ jobs.build.outputs.image }}", "later": "${{ x }}"}
    wr.save()
    html = page(client, url("workflowrun", "change", wr.pk))
    assert "<code>version</code>" in html and ">1.2</span>" in html  # inputs
    assert "registry/app:1.2" in html and "${{ jobs.build.outputs.image }}" in html
    assert "not yet" in html  # an output with no value yet
    assert "2 of 4 jobs are running" in html
    assert "JobsRunning" in html and "lint is running" in html  # the conditions table
    assert f'<a href="{url("workflow", "change", workflow.pk)}">release</a>' in html


def test_the_page_follows_the_run_only_while_it_is_active(client):
    active, _ = diamond_run("active")
    html = page(client, url("workflowrun", "change", active.pk))
    assert LIVE in html and "portal/live.js" in html and "http-equiv" not in html
    assert f"labelSelector=kruntimes.io/workflowrun-uid%3D{active.uid}" in html
    assert "fieldSelector=metadata.name%3Dactive" in html
    assert LIVE not in page(client, url("workflowrun", "change", active.pk) + "?refresh=off")
    for phase in ("Succeeded", "Failed", "Cancelled"):
        done = make_workflow_run(f"done-{phase.lower()}", DIAMOND, status={"phase": phase})
        html = page(client, url("workflowrun", "change", done.pk))
        assert LIVE not in html and "http-equiv" not in html
        assert svg_nodes(html)  # the graph is still drawn
    pending = make_workflow_run("pending", DIAMOND, status={"phase": "Pending"})
    assert LIVE in page(client, url("workflowrun", "change", pending.pk))


def test_job_names_and_values_are_escaped(client):
    evil = "<script>alert(1)</script>"
    wr = make_workflow_run(
        "evil",
        {evil: {"steps": [{"name": evil}]}, "b": {"needs": [evil]}},
        inputs={evil: evil},
        status={
            "phase": "Running",
            "message": evil,
            "jobs": {evil: {"phase": "Running", "steps": [{"name": evil, "outputs": {evil: 1}}]}},
        },
    )
    html = page(client, url("workflowrun", "change", wr.pk))
    assert evil not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert set(svg_nodes(html)) == {"&lt;script&gt;alert(1)&lt;/script&gt;", "b"}
    assert evil not in page(client, url("workflowrun", "changelist"))


def test_nested_workflow_run_of_a_uses_job_is_linked(client):
    child = make_workflow_run("child", {"x": {}}, status={"phase": "Running"})
    wr = make_workflow_run(
        "parent",
        {"call": {"uses": "./deploy", "with": {"env": "prod"}}},
        status={
            "phase": "Running",
            "jobs": {"call": {"phase": "Running", "workflowRunName": "child"}},
        },
    )
    html = page(client, url("workflowrun", "change", wr.pk))
    assert f'<a href="{url("workflowrun", "change", child.pk)}">child</a>' in html
    assert "uses</span> <code>./deploy</code>" in html


def test_detail_query_count_does_not_grow_with_jobs_and_steps(client):
    def build(name, jobs, steps):
        spec = {
            f"j{j}": {
                "needs": [f"j{j - 1}"] if j else [],
                "steps": [{"name": f"s{s}"} for s in range(steps)],
            }
            for j in range(jobs)
        }
        wr = make_workflow_run(name, spec, workflow="release", status={"phase": "Running"})
        status_jobs = {}
        for j in range(jobs):
            step_status = []
            for s in range(steps):
                run = make_step_run(wr, f"j{j}", f"s{s}", status={"phase": "Succeeded"})
                step_status.append({"name": f"s{s}", "phase": "Succeeded", "runName": run.name})
            status_jobs[f"j{j}"] = {
                "phase": "Succeeded",
                "steps": step_status,
                "outputs": {"o": j},
                "artifacts": {"a": ref(run, "a")},
            }
        return set_status(wr, {"phase": "Running", "jobs": status_jobs})

    make_workflow("release", {"a": {}})
    small, big = build("small", 1, 1), build("big", 6, 3)
    with CaptureQueriesContext(connection) as one:
        page(client, url("workflowrun", "change", small.pk))
    with CaptureQueriesContext(connection) as many:
        html = page(client, url("workflowrun", "change", big.pk))
    assert html.count('class="k-run-link"') == 18 and html.count("k-artifact-link") == 6
    assert len(many) == len(one)


def test_pages_survive_odd_rows(client):
    odd = [
        WorkflowRun(namespace="default", name="odd-1", spec={"jobs": []}, status={"jobs": "x"}),
        WorkflowRun(
            namespace="default",
            name="odd-2",
            spec={"jobs": {"a": {"needs": "b", "steps": "nope"}, "b": None}},
            status={"jobs": {"a": {"steps": ["x", {"outputs": [1]}], "artifacts": {"z": 3}}}},
        ),
        WorkflowRun(namespace="default", name="odd-3", spec=[], status=None or {}),
    ]
    for row in odd:
        row.sync_columns()
        row.save()
    page(client, url("workflowrun", "changelist"))
    for row in odd:
        page(client, url("workflowrun", "change", row.pk))


# ------------------------------------------------------------------------------ Cancel


def test_cancel_patches_active_runs_and_refuses_finished_ones(client):
    active, _ = diamond_run("active")
    done = make_workflow_run("done", DIAMOND, status={"phase": "Succeeded"})
    html = page(client, url("workflowrun", "changelist"))
    assert 'value="cancel_workflow_runs"' in html and 'value="delete_objects"' in html
    response = client.post(
        url("workflowrun", "changelist"),
        {"action": "cancel_workflow_runs", "_selected_action": [str(active.pk), str(done.pk)]},
    )
    assert response.status_code == 302
    active.refresh_from_db()
    done.refresh_from_db()
    assert active.spec["cancelRequested"] is True and active.cancel_requested
    assert active.resource_version > 1  # written through the store
    assert active.spec["jobs"] == DIAMOND  # a merge patch: the rest of the spec is kept
    assert "cancelRequested" not in done.spec and not done.cancel_requested
    text = " ".join(messages_of(response))
    assert "Requested cancellation of 1 WorkflowRuns: default/active" in text
    assert "Skipped 1 finished WorkflowRuns: default/done (Succeeded)" in text
    assert "cancel requested" in page(client, url("workflowrun", "changelist"))

    response = client.post(
        url("workflowrun", "changelist"),
        {"action": "cancel_workflow_runs", "_selected_action": [str(active.pk)]},
    )
    assert "already requested" in " ".join(messages_of(response))


def test_staff_without_rbac_sees_pages_and_gets_a_message_not_a_500(client, staff):
    workflow = make_workflow("release", DIAMOND)
    active, _ = diamond_run("active")
    action = make_action("setup", [{"name": "a", "run": "true"}])
    client.force_login(staff)
    assert client.get(url("workflowrun", "changelist")).status_code == 200
    assert client.get(url("workflowrun", "change", active.pk)).status_code == 200
    assert client.get(url("workflow", "change", workflow.pk)).status_code == 200
    assert client.get(url("action", "change", action.pk)).status_code == 200
    response = client.post(
        url("workflowrun", "changelist"),
        {"action": "cancel_workflow_runs", "_selected_action": [str(active.pk)]},
    )
    assert response.status_code == 302
    active.refresh_from_db()
    assert "cancelRequested" not in active.spec and not active.cancel_requested
    text = " ".join(messages_of(response))
    assert "Could not cancel default/active" in text and "forbidden" in text
    assert 'User "bob" cannot patch' in text


# ------------------------------------------------------------------------------ Workflow


def test_workflow_list_shows_jobs_inputs_and_runs(client):
    make_workflow(
        "release",
        DIAMOND,
        inputs={"version": {"type": "string", "required": True}, "dry": {"default": False}},
    )
    make_workflow("empty", {})
    diamond_run("release-1")
    make_workflow_run("release-2", DIAMOND, workflow="release", status={"phase": "Failed"})
    html = page(client, url("workflow", "changelist"))
    runs = url("workflowrun", "changelist") + "?namespace=default&amp;workflow=release"
    assert f'<a href="{runs}">2</a>' in html
    assert "<code>dry</code> <code>version</code>" in html
    assert '<td class="field-jobs_count_cell">4</td>' in html
    assert '<td class="field-jobs_count_cell">0</td>' in html


def test_workflow_list_query_count_does_not_grow_with_rows(client):
    make_workflow("w0", DIAMOND)
    with CaptureQueriesContext(connection) as one:
        page(client, url("workflow", "changelist"))
    for index in range(1, 5):
        make_workflow(f"w{index}", DIAMOND)
        make_workflow_run(f"r{index}", DIAMOND, workflow=f"w{index}")
    with CaptureQueriesContext(connection) as five:
        page(client, url("workflow", "changelist"))
    assert len(five) == len(one)


def test_workflow_detail_shows_the_graph_inputs_and_its_runs(client):
    workflow = make_workflow(
        "release",
        DIAMOND,
        inputs={"version": {"type": "string", "required": True, "description": "to release"}},
        outputs={"image": "${{ jobs.build.outputs.image }}"},
    )
    first, _ = diamond_run("release-1")
    second = make_workflow_run("release-2", DIAMOND, workflow="release", status={"phase": "Failed"})
    make_workflow_run("unrelated", DIAMOND, workflow="other")
    html = page(client, url("workflow", "change", workflow.pk))
    assert svg_nodes(html) == {"build": "", "lint": "", "test": "", "deploy": ""}
    assert "to release" in html and "<code>version</code>" in html
    assert "${{ jobs.build.outputs.image }}" in html
    for run in (first, second):
        assert f'<a href="{url("workflowrun", "change", run.pk)}">{run.name}</a>' in html
    assert "unrelated" not in html
    assert "compile" in html and "package" in html  # the jobs table's steps
    assert LIVE not in html


# ------------------------------------------------------------------------------ Action


def test_action_list_and_detail_show_steps_inputs_and_outputs(client):
    action = make_action(
        "setup-python",
        [
            {"name": "install", "run": "pip install -r requirements.txt", "env": {"PIP": "1"}},
            {"name": "cache", "uses": "cache", "with": {"key": "pip"}},
        ],
        inputs={"python-version": {"default": "3.12", "description": "which Python"}},
        outputs={"path": {"value": "${{ steps.install.outputs.path }}"}},
    )
    html = page(client, url("action", "changelist"))
    assert "setup-python" in html
    assert '<td class="field-steps_count_cell">2</td>' in html
    assert "<code>python-version</code>" in html and "<code>path</code>" in html
    html = page(client, url("action", "change", action.pk))
    assert "pip install -r requirements.txt" in html
    assert "uses</span> <code>cache</code>" in html and "<code>key</code>=" in html
    assert "<code>PIP</code>" in html
    assert "which Python" in html and "3.12" in html
    assert "${{ steps.install.outputs.path }}" in html


def test_a_step_runs_page_opens_with_a_link_to_its_workflow_run(client):
    wfr = make_workflow_run("wfr", jobs=DIAMOND)
    run = make_step_run(wfr, "build", "compile")
    page = client.get(run_url(run)).content.decode()
    # the first section ("Run", open), before Spec and the collapsed ones
    first_section = page[page.index("fieldset-0-0-heading") : page.index("fieldset-0-1-heading")]
    link = f'<a href="{url("workflowrun", "change", wfr.pk)}">wfr</a>'
    assert "<label>Part of:</label>" in first_section and f"WorkflowRun {link}" in first_section
    mine = make_run("mine")  # a user's own Run: no controller
    assert f"WorkflowRun {link}" not in client.get(run_url(mine)).content.decode()


def test_a_step_its_failed_job_never_started_shows_skipped_with_why(client):
    wfr = make_workflow_run("wfr", jobs=DIAMOND)
    status = {
        "phase": "Failed",
        "jobs": {
            "build": {
                "phase": "Failed",
                "message": "step compile: Run wfr-build-compile Failed (Error)",
                "steps": [  # as the controller leaves the steps after a failed one: Pending
                    {"name": "compile", "phase": "Failed", "runName": "wfr-build-compile"},
                    {"name": "package", "phase": "Pending"},
                ],
            }
        },
    }
    wfr = set_status(wfr, status)
    page = client.get(url("workflowrun", "change", wfr.pk)).content.decode()
    package_row = page[page.index("<strong>package</strong>") :].split("</tr>", 1)[0]
    assert ">Skipped</span>" in package_row and "an earlier step failed" in package_row
    compile_row = page[page.index("<strong>compile</strong>") :].split("</tr>", 1)[0]
    assert ">Failed</span>" in compile_row and "an earlier step failed" not in compile_row
