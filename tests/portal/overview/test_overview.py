"""The admin index is the overview: tiles per namespace the user may see, every number a link
to the list it counts, sections in an operator's order with System collapsed."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from portal import overview
from portal.models import Namespace
from scheduling.admin.overview import percentile
from scheduling.models import Run, Runtime
from tests.helpers.rbac import bind_role, make_role
from tests.helpers.records import make_pod, make_run, make_runtime

pytestmark = pytest.mark.django_db


def ensure_namespace(name: str) -> None:
    Namespace.objects.get_or_create(name=name)


def set_run(
    run: Run, phase: str, *, reason: str = "", created_ago=None, start_ago=None, end_ago=None
):
    now = timezone.now()
    status = dict(run.status or {}, phase=phase)
    if reason:
        status["reason"] = reason
        status["message"] = f"because {reason}"
    if start_ago is not None:
        status["startTime"] = (now - start_ago).strftime("%Y-%m-%dT%H:%M:%SZ")
    fields = {"phase": phase, "status": status}
    if created_ago is not None:
        fields["creation_timestamp"] = now - created_ago
    if end_ago is not None:
        fields["finished_at"] = now - end_ago
    Run.objects.filter(pk=run.pk).update(**fields)


@pytest.fixture
def fleet():
    """default: a Runtime wanting 3 pods with 2 ready (2 run slots each), Runs in every
    state; team-b: a Pending Run that only a user granted team-b may see."""
    for ns in ("default", "team-b"):
        ensure_namespace(ns)
    make_runtime(replicas=3)
    make_pod("bash-0")
    make_pod("bash-1")
    make_pod("bash-2", ready=False)
    old = make_run("old-pending")
    set_run(old, "Pending", reason="Unschedulable", created_ago=timedelta(minutes=7))
    set_run(make_run("new-pending"), "Pending", created_ago=timedelta(minutes=1))
    run = make_run("running")
    set_run(run, "Running", start_ago=timedelta(minutes=2))
    Run.objects.filter(pk=run.pk).update(assigned_pod="bash-0")
    for i, wait in enumerate((10, 20, 30, 40)):
        ok = make_run(f"ok-{i}")
        set_run(
            ok,
            "Succeeded",
            created_ago=timedelta(seconds=300 + wait),
            start_ago=timedelta(seconds=300),
            end_ago=timedelta(seconds=300 - 60 * (i + 1)),
        )
    for i, reason in enumerate(("RuntimeExecute", "RuntimeExecute", "PodLost")):
        bad = make_run(f"bad-{i}")
        set_run(
            bad,
            "Failed",
            reason=reason,
            start_ago=timedelta(hours=2),
            end_ago=timedelta(hours=1, minutes=i + 1),
        )
    ancient = make_run("ancient")
    set_run(
        ancient, "Failed", reason="Ancient", start_ago=timedelta(days=3), end_ago=timedelta(days=2)
    )
    make_runtime(namespace="team-b")
    set_run(make_run("theirs", namespace="team-b"), "Pending", reason="Hidden")


def links(html: str) -> dict[str, str]:
    """The text of each link in ``html`` -> its href."""
    return {
        re.sub(r"<[^>]+>", "", text).strip(): unescape(href)
        for href, text in re.findall(r'<a href="([^"]*)"[^>]*>(.*?)</a>', html, re.S)
    }


def tile(page: str, key: str) -> str:
    start = page.index(f'id="tile-{key}"')
    return page[start : page.index("</section>", start)]


def test_the_index_shows_runs_by_phase_with_links_to_the_lists(admin_client, fleet):
    page = admin_client.get("/admin/?namespace=default").content.decode()
    runs = tile(page, "runs")
    now = runs[runs.index('id="runs-now"') : runs.index('id="runs-24h"')]
    found = re.findall(r'<a href="([^"]*)">(\d+)</a>', now)
    counts = {unescape(href).split("phase__exact=")[1].split("&")[0]: int(n) for href, n in found}
    assert counts == {"Pending": 2, "Scheduled": 0, "Running": 1, "Ready": 0}
    day = runs[runs.index('id="runs-24h"') :]
    assert '?phase__exact=Succeeded&amp;finished=24h&amp;namespace=default">4</a>' in day
    assert (
        '?phase__exact=Failed&amp;finished=24h&amp;namespace=default">3</a>' in day
    )  # not "ancient"
    # each link counts what it shows
    for href, n in found:
        listing = admin_client.get(unescape(href))
        assert listing.context["cl"].result_count == int(n), href


def test_the_oldest_pending_run_is_named_with_its_reason(admin_client, fleet):
    runs = tile(admin_client.get("/admin/?namespace=default").content.decode(), "runs")
    assert ">default/old-pending</a>" in runs
    assert "Unschedulable" in runs and "because Unschedulable" in runs
    assert "7m" in runs


def test_timing_percentiles_over_the_last_hour(admin_client, fleet):
    timing = tile(admin_client.get("/admin/?namespace=default").content.decode(), "timing")
    # waits 10,20,30,40 s: p50 20s, p95 40s; durations 60..240 s: p50 2m, p95 4m
    assert "<td>wait (created → Running)</td><td>20s</td><td>40s</td>" in timing
    assert "<td>duration (Running → end)</td><td>2m</td><td>4m</td>" in timing
    assert '?finished=1h&amp;namespace=default">4</a>' in timing


def test_percentile_is_nearest_rank():
    assert percentile([], 50) is None
    assert percentile([5.0], 95) == 5.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0
    assert percentile([float(i) for i in range(1, 101)], 95) == 95.0


def test_failures_are_grouped_by_reason_and_link_to_the_filtered_list(admin_client, fleet):
    failures = tile(admin_client.get("/admin/?namespace=default").content.decode(), "failures")
    assert "Ancient" not in failures  # older than 24 h
    found = links(failures)
    assert set(found) == {"2", "1", "3"}
    listing = admin_client.get(found["2"])
    assert sorted(r.name for r in listing.context["cl"].result_list) == ["bad-0", "bad-1"]
    assert admin_client.get(found["3"]).context["cl"].result_count == 3


def test_runtimes_show_ready_and_desired_pods_and_run_slots(admin_client, fleet):
    runtimes = tile(admin_client.get("/admin/?namespace=default").content.decode(), "runtimes")
    found = links(runtimes)
    assert "2/3" in found and "1/4" in found  # 2 of 3 pods ready; 1 Run on 2x2 slots
    assert admin_client.get(found["2/3"]).context["cl"].result_count == 3  # the Runtime's pods
    assert admin_client.get(found["1/4"]).context["cl"].result_count == 1  # its active Runs


def test_the_throughput_chart_is_inline_svg_split_by_phase(admin_client, fleet):
    chart = tile(admin_client.get("/admin/?namespace=default").content.decode(), "throughput")
    assert "<svg" in chart and "<script" not in chart
    assert chart.count('fill="#1e7e34"') == 4  # four minutes with one Succeeded each
    assert ": Succeeded 1</title>" in chart
    assert "http" not in chart.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert 'finished=1h&amp;namespace=default">4</a>' in chart


def test_a_user_sees_only_the_namespaces_rbac_lets_them_list(
    client, django_user_model, admin_api, fleet
):
    staff = django_user_model.objects.create_user("ops", password="pw", is_staff=True)
    rules = [{"apiGroups": ["kruntimes.io"], "resources": ["runs"], "verbs": ["list"]}]
    make_role(admin_api, "run-lister", rules, namespace="team-b")
    subjects = [{"kind": "User", "name": "ops", "apiGroup": "rbac.authorization.k8s.io"}]
    bind_role(admin_api, "ops-runs", "Role", "run-lister", subjects, namespace="team-b")
    client.force_login(staff)
    runs = tile(client.get("/admin/").content.decode(), "runs")
    assert "team-b/theirs" in runs and "old-pending" not in runs
    assert "Hidden" in runs


def test_without_any_grant_the_tiles_say_so(client, django_user_model, fleet):
    staff = django_user_model.objects.create_user("nobody", password="pw", is_staff=True)
    client.force_login(staff)
    page = client.get("/admin/").content.decode()
    assert "no namespace where you may list Runs" in tile(page, "runs")
    assert "old-pending" not in page and "theirs" not in page


def test_the_overview_queries_do_not_grow_with_history(admin_client, fleet):
    admin_client.get("/admin/")
    with CaptureQueriesContext(connection) as few:
        admin_client.get("/admin/?namespace=default")
    for i in range(30):
        set_run(make_run(f"more-{i}"), "Failed", reason=f"R{i % 3}", end_ago=timedelta(minutes=i))
    with CaptureQueriesContext(connection) as many:
        admin_client.get("/admin/?namespace=default")
    assert len(many.captured_queries) == len(few.captured_queries)


def test_sections_in_order_with_system_collapsed(admin_client, fleet):
    page = admin_client.get("/admin/").content.decode()
    order = [
        page.index(f'id="section-{key}"')
        for key in ("workloads", "capacity", "definitions", "access", "system")
    ]
    assert order == sorted(order)
    workloads = page[order[0] : order[1]]
    assert workloads.index("Runs") < workloads.index("Workflow runs") < workloads.index("Jobs")
    capacity = page[order[1] : order[2]]
    for name in ("Runtimes", "Runtime pods", "Persistent workspaces", "Job classes"):
        assert name in capacity
    assert "Users" not in page[: order[4]] and "Periodic tasks" not in page[: order[4]]
    system = page[order[4] :]
    assert system.startswith('id="section-system"') and "<details" in page[order[4] - 40 : order[4]]
    assert "Users" in system and "Tokens" in system and "Periodic tasks" in system


def test_every_app_registers_its_tiles_through_the_hook():
    keys = [t.key for t in overview.tiles()]
    for key in (
        "runs",
        "failures",
        "timing",
        "throughput",
        "workflowruns",
        "jobs",
        "runtimes",
        "workspaces",
        "jobclasses",
    ):
        assert key in keys
    with pytest.raises(ValueError):
        overview.register_tile(overview.Tile("x", "X", "nowhere", lambda view: ""))


def test_a_tile_that_fails_is_shown_as_an_error_not_a_500(admin_client, fleet, monkeypatch):
    def broken(view):
        raise RuntimeError("boom")

    monkeypatch.setitem(
        overview._tiles, "broken", overview.Tile("broken", "Broken", "workloads", broken)
    )
    response = admin_client.get("/admin/")
    assert response.status_code == 200
    assert "could not be computed" in tile(response.content.decode(), "broken")


def test_workspaces_and_workflow_runs_tiles_count_by_phase(admin_client, fleet):
    from tests.helpers.workspaces import make_workspace  # noqa: PLC0415

    make_workspace("ws")
    page = admin_client.get("/admin/?namespace=default").content.decode()
    found = links(tile(page, "workspaces"))
    assert "all of them" in found
    assert Runtime.objects.count() == 2


def test_a_change_list_carries_the_watch_it_refreshes_from(admin_client, fleet):
    from portal.machinery import history  # noqa: PLC0415

    page = admin_client.get("/admin/scheduling/run/?namespace=default").content.decode()
    url = f"/apis/kruntimes.io/v1alpha1/namespaces/default/runs?watch=true&amp;resourceVersion={history.current()}"
    assert f'data-watch-url="{url}"' in page
    assert "/static/portal/live.js" in page
    pods = admin_client.get("/admin/scheduling/runtimepod/").content.decode()
    assert 'data-watch-url="/apis/kruntimes.io/v1alpha1/runtimepods?watch=true' in pods


def test_each_number_sits_big_over_its_phase_label(admin_client, fleet):
    runs = tile(admin_client.get("/admin/?namespace=default").content.decode(), "runs")
    assert re.search(
        r'<span class="k-big"><a href="[^"]*phase__exact=Pending[^"]*">2</a></span>', runs
    )
    assert re.search(
        r'<span class="k-muted"><span class="k-badge k-pending"[^>]*>Pending</span>', runs
    )


def test_workflow_run_and_job_tiles_show_every_phase_finished_ones_of_the_last_day(
    admin_client, fleet
):
    from jobclasses.models import Job  # noqa: PLC0415
    from workflows.models import WorkflowRun  # noqa: PLC0415

    def workflow_run(name: str, phase: str, ago: timedelta = timedelta(0)) -> None:
        WorkflowRun.objects.create(
            name=name, namespace="default", spec={"jobs": {}}, status={"phase": phase}
        )
        WorkflowRun.objects.filter(name=name).update(
            phase=phase, creation_timestamp=timezone.now() - ago
        )

    workflow_run("running", "Running")
    workflow_run("failed", "Failed")
    workflow_run("cancelled", "Cancelled")
    workflow_run("failed-long-ago", "Failed", ago=timedelta(days=2))
    Job.objects.create(name="bad", namespace="default", spec={}, phase="Failed")
    page = admin_client.get("/admin/?namespace=default").content.decode()

    def counts(name: str) -> dict[str, str]:
        cells = re.findall(r'phase__exact=(\w+)[^"]*">(\d+)</a>', tile(page, name))
        return dict(cells)

    assert counts("workflowruns") == {
        "Pending": "0", "Running": "1", "Succeeded": "0", "Failed": "1", "Cancelled": "1"
    }  # fmt: skip
    assert counts("jobs")["Failed"] == "1"
    assert 'title="created in the last 24 h">24 h' in tile(page, "workflowruns")
