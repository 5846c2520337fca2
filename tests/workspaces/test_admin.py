"""The PersistentWorkspace admin: list and detail, filters and search, Recover, Release now and
the superuser's Force remove finalizer, every write as the logged-in user."""

from __future__ import annotations

import logging

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from portal.machinery import store
from scheduling import run_status
from scheduling.models import Run, RunPhase, Runtime
from tests.helpers.operator import OPERATOR
from tests.helpers.rbac import bind_role
from tests.helpers.records import RUNS, make_pod, make_run, make_runtime
from tests.helpers.workspaces import (
    WORKSPACES,
    bind,
    fresh_workspace,
    lose,
    make_namespace,
    make_workspace,
    use,
)
from workspaces.models import WORKSPACE_CLEANUP, PersistentWorkspace, WorkspacePhase
from workspaces.status import condition

pytestmark = pytest.mark.django_db

FORCE = "force_remove_cleanup_finalizer"


@pytest.fixture
def client(client, admin_user):
    client.force_login(admin_user)
    return client


BOB = [{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}]


@pytest.fixture
def staff(django_user_model, admin_api):
    """bob: staff with Django's permissions on workspaces, and RBAC's read-only ``view`` in
    default (the admin lists what RBAC lets him list; he may change nothing)."""
    bob = django_user_model.objects.create_user("bob", "bob@example.com", "pw", is_staff=True)
    bob.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="workspaces", codename__endswith="persistentworkspace"
        )
    )
    bind_role(admin_api, "bob-view", "ClusterRole", "view", BOB, namespace="default")
    return bob


def url(view, *args):
    return reverse(f"admin:workspaces_persistentworkspace_{view}", args=args)


def names(response):
    assert response.status_code == 200
    return sorted(obj.name for obj in response.context["cl"].result_list)


def messages_of(response):
    return [str(m) for m in get_messages(response.wsgi_request)]


def act(client, action, *workspaces, **extra):
    return client.post(
        url("changelist"),
        {"action": action, "_selected_action": [str(ws.pk) for ws in workspaces], **extra},
    )


def finish(run, phase=RunPhase.SUCCEEDED):
    now = timezone.now()
    status = run_status.running({}, None, now, 1)
    status = run_status.finished(status, phase, "", "", now, 1, exit_code=0)
    store.patch(
        RUNS, run.namespace, run.name, {"status": status}, subresource="status", context=OPERATOR
    )


@pytest.fixture
def bound_ws():
    """The workspace "cache": Bound to bash-0, used, two active Runs and one finished."""
    make_runtime()
    pod = make_pod("bash-0")
    ws = bind(make_workspace("cache", labels={"team": "a"}, ttlSecondsAfterUnused=600), pod)
    use(ws)
    make_run("r-active", workspace={"name": "cache"})
    make_run("r-active-2", workspace={"name": "cache"})
    finish(make_run("r-done", workspace={"name": "cache"}))
    make_run("r-other")  # uses no workspace
    return fresh_workspace(ws), pod


# ------------------------------------------------------------------------------ list


def test_changelist_shows_phase_pod_uid_path_use_and_active_runs(client, bound_ws):
    ws, pod = bound_ws
    make_workspace("waiting")
    response = client.get(url("changelist"))
    assert names(response) == ["cache", "waiting"]
    html = response.content.decode()
    for header in (
        "NAME",
        "NAMESPACE",
        "PHASE",
        "RUNTIME",
        "BOUND POD",
        "BOUND POD UID",
        "PATH",
        "LAST USED",
        "ACTIVE RUNS",
        "AGE",
    ):
        assert f">{header}<" in html, header
    assert '<span class="k-badge k-ok" title="">Bound</span>' in html
    assert '<span class="k-badge k-pending" title="">Pending</span>' in html
    runtime_url = reverse("admin:scheduling_runtime_change", args=[Runtime.objects.get().pk])
    assert f'href="{runtime_url}#pod-bash-0"' in html  # the pod's row on its Runtime's page
    assert f'<code title="{pod.uid}">{str(pod.uid)[:8]}</code>' in html
    assert "<code>/workspace/persistent/cache</code>" in html
    assert "<code>/workspace/persistent/waiting</code>" in html
    assert "s ago</span>" in html and ">never</span>" in html  # cache used, waiting not
    assert 'not finished">2</span>' in html  # r-active, r-active-2; not r-done nor r-other
    assert 'not finished">0</span>' in html


def test_filters_and_search(client, bound_ws):
    ws, pod = bound_ws
    make_namespace("team-a")
    make_workspace("kept", namespace="team-a", runtime="python", cleanupPolicy="Retain")
    lost = lose(bind(make_workspace("gone"), make_pod("bash-1")))

    def listed(query):
        return names(client.get(url("changelist") + query))

    html = client.get(url("changelist")).content.decode()
    for title in ("namespace", "phase", "runtime", "cleanup policy", "terminating", "label"):
        assert f'data-filter-title="{title}"' in html, title
    assert listed("?namespace=team-a") == ["kept"]
    assert listed("?phase__exact=Bound") == ["cache"]
    assert listed("?phase__exact=Lost") == ["gone"]
    assert listed("?phase__exact=Pending") == ["kept"]
    assert listed("?runtime=python") == ["kept"]
    assert listed("?cleanup_policy__exact=Retain") == ["kept"]
    assert listed("?cleanup_policy__exact=DeleteAfterTTL") == ["cache", "gone"]
    assert listed("?q=kep") == ["kept"]  # name
    assert listed("?q=bash-0") == ["cache"]  # bound pod
    assert listed(f"?q={str(pod.uid)[:13]}") == ["cache"]  # bound pod UID
    assert listed(f"?q={lost.uid}") == ["gone"]  # the workspace's own UID
    assert listed("?q=team%3Da") == ["cache"]  # label selector


def test_changelist_does_not_query_per_row(client, bound_ws):
    with CaptureQueriesContext(connection) as one:
        client.get(url("changelist"))
    for index in range(4):
        make_workspace(f"ws-{index}")
        make_run(f"uses-{index}", workspace={"name": f"ws-{index}"})
    with CaptureQueriesContext(connection) as five:
        client.get(url("changelist"))
    assert len(five) == len(one)


# ------------------------------------------------------------------------------ detail


def test_change_page_shows_spec_status_conditions_runs_and_finalizers(client, bound_ws):
    ws, pod = bound_ws
    response = client.get(url("change", ws.pk))
    assert response.status_code == 200
    html = response.content.decode()
    # spec
    assert "DeleteAfterTTL" in html and "600s" in html and "RuntimePodLocal" in html
    # status: phase, binding, conditions (the shared table)
    assert '<span class="k-badge k-ok" title="">Bound</span>' in html
    assert f"<code>{pod.uid}</code>" in html and ">Ready</span>" in html
    assert "<code>/workspace/persistent/cache</code>" in html
    assert 'class="k-table k-conditions"' in html
    assert "<td>BoundToRuntimePod</td>" in html and "<td>RuntimePodReady</td>" in html
    # the Runs using it, linked, with their phase; not the Run that uses no workspace
    for name in ("r-active", "r-active-2", "r-done"):
        run = Run.objects.get(name=name)
        assert f'href="{reverse("admin:scheduling_run_change", args=[run.pk])}">{name}</a>' in html
    assert "r-other" not in html
    assert '<span class="k-badge k-ok" title="">Succeeded</span>' in html
    assert html.count(">active</span>") == 2
    # finalizers and deletion state
    assert f"<code>{WORKSPACE_CLEANUP}</code>" in html
    assert "not requested; finalizers" in html


def test_change_page_of_a_lost_terminating_workspace(client, bound_ws):
    ws, pod = bound_ws
    pod.delete()
    lose(ws)
    store.delete(WORKSPACES, "default", "cache", context=OPERATOR)
    html = client.get(url("change", ws.pk)).content.decode()
    assert '<span class="k-badge k-bad" title="">Lost</span>' in html
    assert "<td>RuntimePodGone</td>" in html
    assert ">gone</span>" in html  # the bound pod no longer exists
    assert "waiting for</span> <code>kruntimes.io/workspace-cleanup</code>" in html


# ------------------------------------------------------------------------------ recover


def test_recover_creates_a_new_workspace_with_the_same_spec_and_leaves_the_old_lost(
    client, admin_user, bound_ws
):
    ws, _pod = bound_ws
    lost = lose(ws)
    response = act(client, "recover_workspaces", lost)
    assert response.status_code == 302
    new = PersistentWorkspace.objects.exclude(pk=lost.pk).get()
    assert new.name.startswith("cache-recovered-") and len(new.name) == len("cache-recovered-") + 5
    assert new.namespace == lost.namespace
    assert new.spec == lost.spec and new.labels == {"team": "a"}
    assert new.phase == WorkspacePhase.PENDING and not new.bound_pod
    assert new.uid != lost.uid and WORKSPACE_CLEANUP in new.finalizers
    after = fresh_workspace(lost)
    assert after.phase == WorkspacePhase.LOST and after.status == lost.status  # not rebound
    text = " ".join(messages_of(response))
    assert new.name in text
    assert "is not rebound" in text and "its data is gone" in text
    entry = LogEntry.objects.get(object_id=str(new.pk))
    assert entry.action_flag == ADDITION and entry.user == admin_user
    assert "default/cache" in entry.change_message


def test_recover_refuses_a_bound_workspace(client, bound_ws):
    ws, _pod = bound_ws
    response = act(client, "recover_workspaces", ws)
    assert response.status_code == 302
    assert PersistentWorkspace.objects.count() == 1
    assert any("not Lost" in m and "default/cache" in m for m in messages_of(response))


def test_a_lost_workspaces_page_has_a_recover_button_that_opens_the_copy(client, bound_ws):
    ws, _pod = bound_ws
    assert 'id="workspace-recover"' not in client.get(url("change", ws.pk)).content.decode()
    lost = lose(ws)
    page = client.get(url("change", lost.pk)).content.decode()
    assert f'action="{url("recover", lost.pk)}"' in page and 'id="workspace-recover"' in page
    assert client.get(url("recover", lost.pk)).status_code == 405  # a POST only
    response = client.post(url("recover", lost.pk))
    new = PersistentWorkspace.objects.exclude(pk=lost.pk).get()
    assert response.status_code == 302 and response["Location"] == url("change", new.pk)
    assert new.spec == lost.spec and new.phase == WorkspacePhase.PENDING


def test_the_recover_button_on_a_workspace_no_longer_lost_says_why_and_stays(client, bound_ws):
    ws, _pod = bound_ws
    response = client.post(url("recover", ws.pk))
    assert response.status_code == 302 and response["Location"] == url("change", ws.pk)
    assert PersistentWorkspace.objects.count() == 1
    assert any("not Lost" in m for m in messages_of(response))


def test_a_recovered_job_workspace_keeps_its_owner(client, bound_ws):
    """A WorkflowRun's job workspace, recovered, still goes with its WorkflowRun."""
    ws, _pod = bound_ws
    owner = [
        {
            "apiVersion": "kruntimes.io/v1alpha1",
            "kind": "WorkflowRun",
            "name": "wfr",
            "uid": "7d3c1a9e-0000-4000-8000-000000000001",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    PersistentWorkspace.objects.filter(pk=ws.pk).update(owner_references=owner)
    lost = lose(ws)
    client.post(url("recover", lost.pk))
    assert PersistentWorkspace.objects.exclude(pk=lost.pk).get().owner_references == owner


def test_recovered_name_fits_a_long_name():
    from workspaces.admin import recovered_name

    name = recovered_name("a" * 250)
    assert len(name) == 253 and "-recovered-" in name


# ------------------------------------------------------------------------------ release


def test_release_now_starts_cleanup_as_a_ttl_expiry_would(client, bound_ws):
    ws, _pod = bound_ws
    pending = make_workspace("waiting")
    response = act(client, "release_workspaces", ws, pending)
    assert response.status_code == 302
    after = fresh_workspace(ws)
    assert after.phase == WorkspacePhase.RELEASED
    cleanup_condition = condition(after.status, "Cleanup")
    assert (cleanup_condition["status"], cleanup_condition["reason"]) == (
        "True",
        "ReleasedByOperator",
    )
    assert "admin" in cleanup_condition["message"]
    # deletion requested; the finalizer holds the object until runtimed deleted the bytes
    assert after.deletion_timestamp is not None and after.finalizers == [WORKSPACE_CLEANUP]
    untouched = fresh_workspace(pending)
    assert untouched.phase == WorkspacePhase.PENDING and untouched.deletion_timestamp is None
    text = " ".join(messages_of(response))
    assert "Released 1 workspaces: default/cache" in text
    assert "Not released" in text and "default/waiting (Pending)" in text


def test_release_now_calls_cleanup_release_with_the_users_context(
    client, admin_user, bound_ws, monkeypatch
):
    ws, _pod = bound_ws
    calls = []

    def release(ws, now, reason, message, context):
        calls.append((ws.pk, reason, context.user))
        return False  # lost a race with a controller

    monkeypatch.setattr("workspaces.cleanup.release", release)
    response = act(client, "release_workspaces", ws)
    assert calls == [(ws.pk, "ReleasedByOperator", admin_user)]
    assert any("changed meanwhile" in m for m in messages_of(response))


# ------------------------------------------------------------------------------ force remove


def test_force_remove_finalizer_needs_a_superuser(client, staff, bound_ws):
    ws, _pod = bound_ws
    client.force_login(staff)
    response = act(client, FORCE, ws, post="yes")
    assert response.status_code == 302
    assert fresh_workspace(ws).finalizers == [WORKSPACE_CLEANUP]
    assert any("Only a superuser" in m for m in messages_of(response))
    assert not LogEntry.objects.exists()


def test_force_remove_finalizer_confirms_removes_and_audits(client, admin_user, bound_ws, caplog):
    ws, _pod = bound_ws
    store.delete(WORKSPACES, "default", "cache", context=OPERATOR)
    other = make_workspace("other")
    confirm = act(client, FORCE, ws, other)
    assert confirm.status_code == 200
    html = confirm.content.decode()
    assert "Pod-local data may be left" in html
    assert ">default/cache</a>" in html and ">default/other</a>" in html
    assert 'name="post" value="yes"' in html and "Terminating" in html
    assert fresh_workspace(ws).finalizers == [
        WORKSPACE_CLEANUP
    ]  # nothing happens before confirming

    with caplog.at_level(logging.WARNING, logger="workspaces.admin"):
        response = act(client, FORCE, ws, other, post="yes")
    assert response.status_code == 302
    assert not PersistentWorkspace.objects.filter(pk=ws.pk).exists()  # was Terminating
    assert (
        fresh_workspace(other).finalizers == []
        and fresh_workspace(other).deletion_timestamp is None
    )
    entries = {e.object_id: e for e in LogEntry.objects.filter(action_flag=CHANGE)}
    assert set(entries) == {str(ws.pk), str(other.pk)}
    assert entries[str(ws.pk)].user == admin_user
    assert WORKSPACE_CLEANUP in entries[str(ws.pk)].change_message
    assert "bash-0" in entries[str(ws.pk)].change_message
    logged = [r.getMessage() for r in caplog.records if r.name == "workspaces.admin"]
    assert len(logged) == 2 and all("force-removed finalizer" in line for line in logged)
    assert any("default/cache" in line and "bash-0" in line for line in logged)
    assert any("default/cache (deleted)" in m for m in messages_of(response))


def test_the_generic_remove_finalizers_action_is_not_offered(client, bound_ws):
    html = client.get(url("changelist")).content.decode()
    assert f'value="{FORCE}"' in html and 'value="recover_workspaces"' in html
    assert 'value="release_workspaces"' in html
    assert 'value="remove_finalizers"' not in html


# ------------------------------------------------------------------------------ RBAC


def test_staff_without_rbac_sees_pages_and_gets_a_message_not_a_500(client, staff, bound_ws):
    ws, pod = bound_ws
    lost = lose(ws)
    client.force_login(staff)
    assert client.get(url("changelist")).status_code == 200
    assert client.get(url("change", ws.pk)).status_code == 200
    response = act(client, "recover_workspaces", lost)
    assert response.status_code == 302
    assert PersistentWorkspace.objects.count() == 1
    text = " ".join(messages_of(response))
    assert "Could not recover default/cache" in text and "is forbidden" in text
    assert 'User "bob" cannot create' in text

    bound = bind(make_workspace("b"), pod)
    response = act(client, "release_workspaces", bound)
    assert response.status_code == 302
    after = fresh_workspace(bound)
    assert after.phase == WorkspacePhase.BOUND and after.deletion_timestamp is None
    text = " ".join(messages_of(response))
    assert "Could not release default/b" in text and 'User "bob" cannot delete' in text
