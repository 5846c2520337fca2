"""The scheduling admin: Runtime, Run and RuntimePod pages, filters, Cancel and Forget pod."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from portal.machinery import store
from portal.machinery.registry import registry
from scheduling import run_status
from scheduling.models import Run, RunPhase, Runtime, RuntimePod
from tests.helpers.operator import OPERATOR
from tests.helpers.workspaces import make_workspace

pytestmark = pytest.mark.django_db

API = "kruntimes.io/v1alpha1"
PENDING_MESSAGE = "0/3 pods: 2 at capacity, 1 violates runAntiAffinity"


@pytest.fixture
def client(client, admin_user):
    client.force_login(admin_user)
    return client


def kind(model):
    return registry.for_model(model)


def make_namespace(name):
    from portal.models import Namespace

    store.create(
        kind(Namespace),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        context=OPERATOR,
    )


def make_runtime(name="bash", namespace="default", *, image="bash:5", replicas=1, **spec):
    store.create(
        kind(Runtime),
        {
            "apiVersion": API,
            "kind": "Runtime",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "template": {"spec": {"containers": [{"name": "runtime", "image": image}]}},
                "replicas": replicas,
                **spec,
            },
        },
        context=OPERATOR,
    )
    return Runtime.objects.get(namespace=namespace, name=name)


def make_run(name, namespace="default", *, runtime="bash", labels=None, status=None, **spec):
    store.create(
        kind(Run),
        {
            "apiVersion": API,
            "kind": "Run",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {
                "runtime": runtime,
                "source": {"inline": "echo hi"},
                "mode": {"task": {}},
                **spec,
            },
        },
        context=OPERATOR,
    )
    if status is not None:
        set_status(name, status, namespace)
    return Run.objects.get(namespace=namespace, name=name)


def set_status(name, status, namespace="default"):
    store.patch(
        kind(Run), namespace, name, {"status": status}, subresource="status", context=OPERATOR
    )


def make_pod(
    name,
    runtime="bash",
    namespace="default",
    *,
    ready=True,
    heartbeat_age=2,
    active_runs=(),
    capacity=None,
    provider="local",
):
    return RuntimePod.objects.create(
        namespace=namespace,
        runtime=runtime,
        name=name,
        ready=ready,
        phase="Running" if ready else "Pending",
        provider=provider,
        host="node-1",
        pid=4242,
        capacity=capacity or {"runs": 2},
        active_runs=list(active_runs),
        last_heartbeat=timezone.now() - timedelta(seconds=heartbeat_age),
    )


def now():
    return timezone.now()


def pending(message=PENDING_MESSAGE):
    return run_status.pending({}, message, now(), 1)


def bound(pod, start=True):
    status = run_status.scheduled({}, pod.name, str(pod.uid), now(), 1)
    return run_status.running(status, None, now(), 1) if start else status


def failed(reason="ExecutionLost", message="runtimed is no longer executing this Run"):
    status = run_status.running(run_status.pending({}, "waiting", now(), 1), None, now(), 1)
    return run_status.finished(status, RunPhase.FAILED, reason, message, now(), 1)


def succeeded():
    status = run_status.running({}, None, now(), 1)
    return run_status.finished(status, RunPhase.SUCCEEDED, "", "", now(), 1, exit_code=0)


def url(model, view, *args):
    return reverse(f"admin:scheduling_{model}_{view}", args=args)


def names(response):
    assert response.status_code == 200
    return sorted(obj.name for obj in response.context["cl"].result_list)


def messages_of(response):
    return [str(m) for m in get_messages(response.wsgi_request)]


# ------------------------------------------------------------------------------ Runtime


def test_runtime_changelist_shows_replicas_ready_pods_and_image(client):
    make_runtime(replicas=3)
    make_runtime("python", image="python:3.12")
    make_pod("bash-0")
    make_pod("bash-1", ready=False)
    response = client.get(url("runtime", "changelist"))
    html = response.content.decode()
    assert names(response) == ["bash", "python"]
    for header in ("REPLICAS", "READY PODS", "IMAGE", "AGE"):
        assert f">{header}<" in html
    assert ">1/2</span>" in html  # bash: 1 of its 2 pods ready
    assert ">0/0</span>" in html  # python: no pods
    assert "<code>bash:5</code>" in html and "<code>python:3.12</code>" in html


def test_runtime_changelist_counts_pods_for_the_page_not_per_row(client):
    make_runtime()
    make_pod("bash-0")
    with CaptureQueriesContext(connection) as one:
        client.get(url("runtime", "changelist"))
    for index in range(4):
        make_runtime(f"extra-{index}")
        make_pod(f"extra-{index}-0", runtime=f"extra-{index}")
    with CaptureQueriesContext(connection) as five:
        client.get(url("runtime", "changelist"))
    assert len(five) == len(one)


def test_runtime_change_page_shows_pod_table_and_capacity(client):
    runtime = make_runtime(capacity={"resources": {"runs": 3}})
    busy = make_pod("bash-0", capacity={"runs": 3})
    make_pod("bash-1", ready=False, heartbeat_age=60, capacity={"runs": 3})
    run = make_run("r1", status=bound(busy))
    RuntimePod.objects.filter(pk=busy.pk).update(active_runs=[{"uid": str(run.uid), "attempt": 1}])
    make_run("r2", status=pending())
    response = client.get(url("runtime", "change", runtime.pk))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Runtime Pods" in html
    for header in ("uid", "heartbeat", "capacity", "used runs", "active runs (heartbeat)"):
        assert f"<th>{header}</th>" in html
    assert 'id="pod-bash-0"' in html and 'id="pod-bash-1"' in html
    assert str(busy.uid) in html
    assert f'href="{url("runtimepod", "change", busy.pk)}"' in html
    assert "<td>1/3</td>" in html  # one active Run of three
    assert ">60s ago<" in html and "k-badge k-bad" in html  # the silent pod's heartbeat is red
    assert f'href="{url("run", "change", run.pk)}">r1</a>' in html  # reported executing
    assert "Effective capacity" in html and "runs=3" in html
    assert "across 1 ready pods" in html
    assert "1 Pending" in html and "1 Running" in html  # the Runtime's Runs by phase


def test_runtime_namespace_filter(client):
    make_namespace("team-a")
    make_runtime()
    make_runtime("bash", "team-a")
    response = client.get(url("runtime", "changelist") + "?namespace=team-a")
    assert [r.namespace for r in response.context["cl"].result_list] == ["team-a"]


# ------------------------------------------------------------------------------ Run list


def test_run_changelist_shows_why_pending_why_failed_and_where_running(client):
    runtime = make_runtime()
    pod = make_pod("bash-0")
    make_run("waiting", status=pending())
    make_run("broken", status=failed())
    make_run("busy", status=bound(pod))
    make_run("fresh")  # never seen by the scheduler
    response = client.get(url("run", "changelist"))
    assert names(response) == ["broken", "busy", "fresh", "waiting"]
    html = response.content.decode()
    for header in ("PHASE", "RUNTIME", "POD", "REASON / MESSAGE", "DURATION", "AGE"):
        assert f">{header}<" in html
    assert PENDING_MESSAGE in html
    assert ">ExecutionLost<" in html and "runtimed is no longer executing this Run" in html
    assert "waiting for the scheduler" in html
    assert '<span class="k-badge k-pending" title="">Pending</span>' in html
    assert '<span class="k-badge k-bad" title="">Failed</span>' in html
    runtime_url = url("runtime", "change", runtime.pk)
    assert f'href="{runtime_url}#pod-bash-0"' in html  # the pod's row on its Runtime's page
    assert f'href="{runtime_url}">bash</a>' in html
    assert "so far" in html  # the running Run's duration runs to now


def test_the_run_page_says_the_exit_code_once_whether_or_not_the_message_says_it(client):
    make_runtime()
    started = run_status.running({}, None, now(), 1)
    said = "the step exited with exit code 2"
    for name, message, code in (("says", said, 2), ("silent", "", 3)):
        status = run_status.finished(started, "Failed", "Error", message, now(), 1, exit_code=code)
        make_run(name, status=status)
    says = client.get(url("run", "change", Run.objects.get(name="says").pk)).content.decode()
    assert "exited with exit code 2" in says and "exit code</span> <code>2</code>" not in says
    silent = client.get(url("run", "change", Run.objects.get(name="silent").pk)).content.decode()
    assert "exit code</span> <code>3</code>" in silent


def test_run_filters_and_search(client):
    make_namespace("team-a")
    make_runtime()
    make_runtime("python", image="python:3")
    pod = make_pod("bash-0")
    make_run("waiting", labels={"app": "web"}, status=pending())
    make_run("busy", status=bound(pod))
    make_run("py", runtime="python", status=succeeded())
    make_run("other", "team-a")  # never scheduled: Pending without a message
    store.patch(
        kind(Run),
        "team-a",
        "other",
        {"metadata": {"finalizers": ["example.com/x"]}},
        context=OPERATOR,
    )
    store.delete(kind(Run), "team-a", "other", context=OPERATOR)

    def listed(query):
        return names(client.get(url("run", "changelist") + query))

    html = client.get(url("run", "changelist")).content.decode()
    for title in ("namespace", "phase", "runtime", "assigned pod", "terminating", "label"):
        assert f'data-filter-title="{title}"' in html
    assert listed("?phase__exact=Pending") == ["other", "waiting"]
    assert listed("?phase__exact=Succeeded") == ["py"]
    assert listed("?runtime=python") == ["py"]
    assert listed("?namespace=team-a") == ["other"]
    assert listed("?assigned=yes") == ["busy"]
    assert listed("?assigned=no") == ["other", "py", "waiting"]
    assert listed("?terminating=yes") == ["other"]
    assert listed("?q=bash-0") == ["busy"]  # assigned pod
    assert listed("?q=app%3Dweb") == ["waiting"]  # label selector
    assert listed("?q=team-a") == ["other"]  # namespace
    assert listed("?q=wait") == ["waiting"]  # name


def test_run_changelist_does_not_query_per_row(client):
    make_runtime()
    make_run("r0", status=pending())
    with CaptureQueriesContext(connection) as one:
        client.get(url("run", "changelist"))
    for index in range(1, 5):
        make_run(f"r{index}", status=pending())
    with CaptureQueriesContext(connection) as five:
        client.get(url("run", "changelist"))
    assert len(five) == len(one)


# ------------------------------------------------------------------------------ Run detail


def test_run_change_page_shows_spec_timeline_conditions_and_pod_link(client):
    runtime = make_runtime()
    pod = make_pod("bash-0")
    make_workspace("cache")  # a Run may reference only a workspace that exists
    run = make_run(
        "r1",
        labels={"app": "web"},
        source={"inline": "echo <hello>\nexit 0"},
        mode={"task": {"args": ["-x", "y"]}},
        env=[{"name": "TOKEN", "value": "s3cret-value"}, {"name": "DEBUG", "value": "1"}],
        timeout="10m",
        workspace={"name": "cache"},
        resources={"requests": {"runs": 1, "gpu": 1}},
        affinity={
            "runAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {
                            "matchLabels": {"app": "web"},
                            "matchExpressions": [
                                {"key": "tier", "operator": "In", "values": ["a", "b"]}
                            ],
                        },
                        "topologyKey": "kruntimes.io/runtime-pod",
                    }
                ]
            },
            "runAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 50,
                        "runAffinityTerm": {
                            "labelSelector": {
                                "matchExpressions": [{"key": "cache", "operator": "Exists"}]
                            },
                            "topologyKey": "kruntimes.io/runtime-pod",
                        },
                    }
                ]
            },
        },
        status=bound(pod),
    )
    response = client.get(url("run", "change", run.pk))
    assert response.status_code == 200
    html = response.content.decode()
    # spec summary
    assert "<strong>inline</strong>" in html
    assert '<pre class="k-yaml">echo &lt;hello&gt;\nexit 0</pre>' in html
    assert "<strong>task</strong>" in html and "<code>-x</code> <code>y</code>" in html
    assert "<code>TOKEN</code> <code>DEBUG</code>" in html
    assert "10m" in html
    assert "<code>app=web,tier in (a,b)</code>" in html and "runAntiAffinity" in html
    assert "preferred (weight 50)" in html and "<code>cache</code>" in html
    assert "PersistentWorkspace/cache" in html
    assert "gpu=1, runs=1" in html
    # progress: the pod's row on the Runtime's page, the timeline, the conditions table
    assert f'href="{url("runtime", "change", runtime.pk)}#pod-bash-0"' in html
    assert str(pod.uid) in html
    timeline = html[html.index("<th>after creation</th>") :]
    order = [timeline.index(f"<td>{event}</td>") for event in ("Created", "Scheduled", "started")]
    assert order == sorted(order)
    assert "<td>+0s</td>" in timeline
    assert 'class="k-table k-conditions"' in html and "assigned to Runtime Pod bash-0" in html


def test_run_change_page_of_a_failed_run_and_a_gone_pod(client):
    make_runtime()
    pod = make_pod("bash-0")
    run = make_run("r1", status=bound(pod))
    set_status(
        "r1",
        run_status.finished(
            Run.objects.get(pk=run.pk).status,
            RunPhase.FAILED,
            "PodGone",
            "the Runtime Pod is gone",
            now(),
            1,
            exit_code=137,
        ),
    )
    pod.delete()
    html = client.get(url("run", "change", run.pk)).content.decode()
    assert ">PodGone<" in html and "the Runtime Pod is gone" in html
    assert "<code>137</code>" in html
    assert ">gone<" in html
    assert "<td>Completed</td>" in html and "<td>completed</td>" in html


# ------------------------------------------------------------------------------ Cancel


def test_cancel_action_patches_pending_runs_and_skips_finished_ones(client):
    make_runtime()
    waiting = make_run("waiting", status=pending())
    done = make_run("done", status=succeeded())
    html = client.get(url("run", "changelist")).content.decode()
    assert 'value="cancel_runs"' in html and 'value="delete_objects"' in html
    response = client.post(
        url("run", "changelist"),
        {"action": "cancel_runs", "_selected_action": [str(waiting.pk), str(done.pk)]},
    )
    assert response.status_code == 302
    waiting.refresh_from_db()
    done.refresh_from_db()
    assert waiting.spec["cancelRequested"] is True and waiting.cancel_requested
    assert "cancelRequested" not in done.spec and not done.cancel_requested
    text = " ".join(messages_of(response))
    assert "Requested cancellation of 1 Runs: default/waiting" in text
    assert "Skipped 1 finished Runs: default/done (Succeeded)" in text
    html = client.get(url("run", "changelist")).content.decode()
    assert "cancel requested" in html

    response = client.post(
        url("run", "changelist"), {"action": "cancel_runs", "_selected_action": [str(waiting.pk)]}
    )
    assert "already requested" in " ".join(messages_of(response))


# ------------------------------------------------------------------------------ RuntimePod


def test_runtimepod_changelist_shows_heartbeat_and_usage(client):
    runtime = make_runtime()
    fresh = make_pod("bash-0", heartbeat_age=3)
    make_pod("bash-1", ready=False, heartbeat_age=40)
    make_run("r1", status=bound(fresh))
    RuntimePod.objects.filter(pk=fresh.pk).update(
        active_runs=[{"uid": str(uuid.uuid4()), "attempt": 1}]
    )
    response = client.get(url("runtimepod", "changelist"))
    assert names(response) == ["bash-0", "bash-1"]
    html = response.content.decode()
    for header in (
        "NAMESPACE",
        "RUNTIME",
        "NAME",
        "UID",
        "READY",
        "PHASE",
        "HEARTBEAT",
        "CAPACITY",
        "USED RUNS",
        "ACTIVE RUNS",
        "PROVIDER",
        "HOST / PID",
    ):
        assert f">{header}<" in html
    assert '<span title="last heartbeat' in html and "3s ago" in html  # fresh: plain
    assert 'class="k-badge k-bad"' in html and ">40s ago<" in html  # stale: red
    assert ">Ready<" in html and ">NotReady<" in html
    assert str(fresh.uid)[:8] in html
    assert '<td class="field-capacity_cell">runs=2</td>' in html
    assert '<td class="field-used_cell">1/2</td>' in html
    assert "node-1/4242" in html
    assert f'href="{url("runtime", "change", runtime.pk)}"' in html
    assert 'value="forget_pods"' in html and 'value="delete_selected"' not in html


def test_runtimepod_filters_and_search(client):
    make_namespace("team-a")
    make_pod("bash-0")
    make_pod("bash-1", ready=False)
    make_pod("py-0", runtime="python", provider="kubernetes")
    make_pod("bash-0", namespace="team-a")

    def listed(query):
        response = client.get(url("runtimepod", "changelist") + query)
        return sorted(f"{p.namespace}/{p.name}" for p in response.context["cl"].result_list)

    assert listed("?ready__exact=1") == ["default/bash-0", "default/py-0", "team-a/bash-0"]
    assert listed("?ready__exact=0") == ["default/bash-1"]
    assert listed("?runtime=python") == ["default/py-0"]
    assert listed("?provider=kubernetes") == ["default/py-0"]
    assert listed("?namespace=team-a") == ["team-a/bash-0"]
    assert listed("?q=py") == ["default/py-0"]
    assert listed("?q=bash-1") == ["default/bash-1"]


def test_runtimepod_is_read_only(client):
    pod = make_pod("bash-0")
    assert client.get(url("runtimepod", "add")).status_code == 403
    response = client.get(url("runtimepod", "change", pod.pk))
    assert response.status_code == 200  # view only
    html = response.content.decode()
    assert 'name="_save"' not in html and "bash-0" in html
    response = client.post(url("runtimepod", "change", pod.pk), {"name": "renamed"})
    assert response.status_code == 403
    assert RuntimePod.objects.get(pk=pod.pk).name == "bash-0"
    assert (
        url("runtimepod", "add") not in client.get(url("runtimepod", "changelist")).content.decode()
    )


def test_forget_pod_confirms_then_removes_only_the_row(client):
    make_runtime()
    pod = make_pod("bash-0")
    other = make_pod("bash-1")
    run = make_run("r1", status=bound(pod))
    action = {"action": "forget_pods", "_selected_action": [str(pod.pk)]}
    confirm = client.post(url("runtimepod", "changelist"), action)
    assert confirm.status_code == 200
    html = confirm.content.decode()
    assert "PodGone" in html and ">r1</a>" in html and 'name="post" value="yes"' in html
    assert RuntimePod.objects.filter(pk=pod.pk).exists()  # nothing before confirming
    response = client.post(url("runtimepod", "changelist"), {**action, "post": "yes"})
    assert response.status_code == 302
    assert not RuntimePod.objects.filter(pk=pod.pk).exists()
    assert RuntimePod.objects.filter(pk=other.pk).exists()
    assert Run.objects.get(pk=run.pk).phase == RunPhase.RUNNING  # the reconciler's job
    assert "Forgot 1 Runtime Pods: default/bash-0" in " ".join(messages_of(response))


def test_single_pod_delete_page_warns_and_removes_the_row(client):
    pod = make_pod("bash-0")
    page = client.get(url("runtimepod", "delete", pod.pk))
    assert page.status_code == 200 and "PodGone" in page.content.decode()
    response = client.post(url("runtimepod", "delete", pod.pk), {"post": "yes"})
    assert response.status_code == 302
    assert not RuntimePod.objects.filter(pk=pod.pk).exists()


def test_pages_survive_odd_rows(client):
    runtime = make_runtime()
    pod = make_pod("bash-0", active_runs=["nope", {"uid": "not-a-uuid"}])
    RuntimePod.objects.filter(pk=pod.pk).update(capacity=["x"], last_heartbeat=None)
    run = make_run("r1")
    Run.objects.filter(pk=run.pk).update(
        status={"startTime": "garbage", "conditions": ["x", {"type": 3}]},
        spec={"runtime": "bash", "source": "odd", "mode": [], "affinity": {"runAffinity": 1}},
    )
    for page in (
        url("runtime", "changelist"),
        url("runtime", "change", runtime.pk),
        url("run", "changelist"),
        url("run", "change", run.pk),
        url("runtimepod", "changelist"),
        url("runtimepod", "change", pod.pk),
    ):
        assert client.get(page).status_code == 200, page
