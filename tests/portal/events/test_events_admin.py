"""An object's Events on its admin change page, and the Events list."""

from __future__ import annotations

import pytest
from django.urls import reverse

from portal import events_recorder
from portal.models import Event
from scheduling.models import Runtime
from tests.helpers.jobclasses import create, job_manifest, local_class, set_namespace
from tests.helpers.records import make_run, make_runtime
from tests.helpers.workspaces import make_workspace

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_buckets():
    events_recorder.spam_filter.reset()


@pytest.fixture
def client(client, admin_user):
    client.force_login(admin_user)
    return client


def change_page(client, obj) -> str:
    opts = obj._meta
    response = client.get(
        reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
    )
    assert response.status_code == 200
    return response.content.decode()


def run():
    make_runtime()
    return make_run("r1")


def runtime():
    make_runtime()
    return Runtime.objects.get(name="bash")


def workspace():
    make_runtime()
    return make_workspace()


def job():
    set_namespace("default")
    local_class("default", default=True)
    return create(job_manifest("j1"), namespace="default")


def job_class():
    set_namespace("default")
    return local_class("default", default=True)


def workflow_run():
    from portal.machinery import store
    from portal.machinery.registry import registry
    from tests.helpers.operator import OPERATOR
    from tests.helpers.workflows import workflow_run_manifest

    kind = registry.lookup("workflowruns")
    return store.create(kind, workflow_run_manifest(), namespace="default", context=OPERATOR)


@pytest.mark.parametrize("make", [run, runtime, workspace, job, job_class, workflow_run])
def test_a_change_page_lists_the_objects_events_newest_first(client, make):
    obj = make()
    events_recorder.record(obj, "FirstThing", "it began")
    events_recorder.record(obj, "SecondThing", "<b>then</b> this", type=events_recorder.WARNING)
    page = change_page(client, obj)
    assert 'class="fieldset-heading">Events</h2>' in page
    section = page[page.index('class="fieldset-heading">Events</h2>') :]
    assert section.index("SecondThing") < section.index("FirstThing")
    assert "&lt;b&gt;then&lt;/b&gt; this" in section  # messages are escaped
    assert 'k-badge k-warn" title="">Warning' in section


def test_a_repeated_event_shows_its_count(client):
    obj = run()
    for _ in range(3):
        events_recorder.record(obj, "BackOff", "waiting")
    assert "(x3 over" in change_page(client, obj)


def test_an_object_without_events_says_so(client):
    assert "no Events in the last hour" in change_page(client, run())


def test_the_events_list_and_an_events_page(client):
    obj = run()
    events_recorder.record(obj, "Started", "attempt 1 started")
    response = client.get(reverse("admin:portal_event_changelist"))
    assert response.status_code == 200 and "Started" in response.content.decode()
    page = change_page(client, Event.objects.get())
    assert 'class="fieldset-heading">Events</h2>' not in page
