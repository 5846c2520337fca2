"""The work queues' admin page: the controllers' keys, read-only, with when each is due, who
holds it and how often it failed; filters, search, a per-queue summary, and the two things an
operator does (reconcile now, forget), each behind its Django permission."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone

from portal.models import WorkItem

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:portal_workitem_changelist"


def item(queue: str, key: str, due_in: float = 0.0, **fields) -> WorkItem:
    now = timezone.now()
    return WorkItem.objects.create(
        queue=queue, key=key, due_at=now + timedelta(seconds=due_in), **fields
    )


def listed(client, query: str = "") -> list[str]:
    response = client.get(reverse(CHANGELIST) + query)
    assert response.status_code == 200
    return [str(row) for row in response.context["cl"].result_list]


def messages_of(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


@pytest.fixture
def queues(monkeypatch):
    # one clock for the rows and the page: what "in 30s" says does not depend on how long
    # the machine takes to render it
    now = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: now)
    return {
        "waiting": item("jobs", "ns/later", due_in=30.5),
        "overdue": item("gc", "owner-1", due_in=-125.5),
        "claimed": item("jobs", "ns/held", due_in=-1, claimed_until=now + timedelta(minutes=4)),
        "failing": item("workflows", "uid-9", due_in=5, failures=3, dirty=False),
    }


def test_the_changelist_shows_each_key_ordered_by_due_time(admin_client, queues):
    response = admin_client.get(reverse(CHANGELIST))
    html = response.content.decode()
    for header in ("QUEUE", "KEY", "DUE", "CLAIMED", "DIRTY", "FAILURES", "ADDED"):
        assert f">{header}<" in html
    assert [str(row) for row in response.context["cl"].result_list] == [
        "gc: owner-1",
        "jobs: ns/held",
        "workflows: uid-9",
        "jobs: ns/later",
    ]
    assert re.search(r">overdue 2m[56]s<", html) and re.search(r">in (29|30)s<", html)
    assert "by a worker until" in html and ">free<" in html


def test_filters_and_search(admin_client, queues):
    assert listed(admin_client, "?queue=jobs") == ["jobs: ns/held", "jobs: ns/later"]
    assert listed(admin_client, "?claimed=claimed") == ["jobs: ns/held"]
    assert listed(admin_client, "?claimed=free") == [
        "gc: owner-1",
        "workflows: uid-9",
        "jobs: ns/later",
    ]
    assert listed(admin_client, "?failing=yes") == ["workflows: uid-9"]
    assert listed(admin_client, "?overdue=yes") == ["gc: owner-1"]  # the claimed one is worked on
    assert listed(admin_client, "?q=ns/") == ["jobs: ns/held", "jobs: ns/later"]


def test_the_summary_counts_each_queue(admin_client, queues):
    response = admin_client.get(reverse(CHANGELIST))
    summary = {row["queue"]: row for row in response.context["queue_summary"]}
    assert set(summary) == {"gc", "jobs", "workflows"}
    assert (summary["jobs"]["waiting"], summary["jobs"]["claimed"]) == (1, 1)
    assert summary["workflows"]["failing"] == 1
    assert summary["gc"]["overdue"] in ("2m5s", "2m6s") and summary["jobs"]["overdue"] == ""
    assert 'id="workqueue-summary"' in response.content.decode()


def test_reconcile_now_makes_the_keys_due_and_kicks_their_queues(
    admin_client, queues, django_capture_on_commit_callbacks, monkeypatch
):
    from portal.machinery import events

    sent: list[tuple] = []
    monkeypatch.setattr(events, "_send", lambda task, args, options: sent.append(args))
    picked = [queues["waiting"], queues["failing"]]
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse(CHANGELIST),
            {"action": "reconcile_now", "_selected_action": [str(i.pk) for i in picked]},
        )
    assert response.status_code == 302
    now = timezone.now()
    for row in picked:
        assert WorkItem.objects.get(pk=row.pk).due_at <= now
    assert WorkItem.objects.get(pk=queues["claimed"].pk).dirty is True  # untouched rows stay
    assert sorted(sent) == [("jobs",), ("workflows",)]
    assert "2 keys are due now: jobs: ns/later, workflows: uid-9" in messages_of(response)


def test_forget_removes_the_rows(admin_client, queues):
    picked = queues["overdue"]
    response = admin_client.post(
        reverse(CHANGELIST), {"action": "forget", "_selected_action": [str(picked.pk)]}
    )
    assert response.status_code == 302
    assert not WorkItem.objects.filter(pk=picked.pk).exists()
    assert WorkItem.objects.count() == 3
    assert any("Forgot 1 key" in m and "gc: owner-1" in m for m in messages_of(response))


def test_the_page_is_read_only(admin_client, queues):
    row = queues["waiting"]
    assert admin_client.get(reverse("admin:portal_workitem_add")).status_code == 403
    page = admin_client.get(reverse("admin:portal_workitem_change", args=[row.pk]))
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    response = admin_client.post(
        reverse("admin:portal_workitem_change", args=[row.pk]), {"key": "other"}
    )
    assert response.status_code == 403
    assert WorkItem.objects.get(pk=row.pk).key == "ns/later"
    html = admin_client.get(reverse(CHANGELIST)).content.decode()
    assert 'value="delete_selected"' not in html


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("ops", password="pw", is_staff=True)


def test_staff_without_permissions_see_nothing(client, staff, queues):
    client.force_login(staff)
    assert client.get(reverse(CHANGELIST)).status_code == 403


def test_the_view_permission_shows_the_queues_but_acts_on_nothing(client, staff, queues):
    staff.user_permissions.add(Permission.objects.get(codename="view_workitem"))
    client.force_login(staff)
    response = client.get(reverse(CHANGELIST))
    assert response.status_code == 200 and len(response.context["cl"].result_list) == 4
    html = response.content.decode()
    assert 'value="reconcile_now"' not in html and 'value="forget"' not in html
    row = queues["waiting"]
    before = WorkItem.objects.get(pk=row.pk).due_at
    for action in ("reconcile_now", "forget"):
        client.post(reverse(CHANGELIST), {"action": action, "_selected_action": [str(row.pk)]})
    assert WorkItem.objects.get(pk=row.pk).due_at == before
    assert client.post(reverse("admin:portal_workitem_delete", args=[row.pk]), {"post": "yes"})
    assert WorkItem.objects.filter(pk=row.pk).exists()


def test_each_action_needs_its_own_permission(client, staff, queues):
    staff.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_workitem", "change_workitem"])
    )
    client.force_login(staff)
    html = client.get(reverse(CHANGELIST)).content.decode()
    assert 'value="reconcile_now"' in html and 'value="forget"' not in html
