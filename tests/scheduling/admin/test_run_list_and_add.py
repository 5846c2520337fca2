"""The Run list offers only the phases Runs can reach (no Ready while every Run is a task);
Add Run starts from a manifest that works."""

from __future__ import annotations

import pytest
from django.urls import reverse

from scheduling.models import Run
from tests.helpers.records import make_run, make_runtime

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(client, admin_user):
    client.force_login(admin_user)
    return client


def offered(client) -> list[str]:
    response = client.get(reverse("admin:scheduling_run_changelist"))
    assert response.status_code == 200
    spec = next(f for f in response.context["cl"].filter_specs if f.title == "phase")
    return [value for value, _ in spec.lookup_choices]


def test_task_runs_are_never_offered_ready(client):
    make_runtime()
    make_run("r1")
    phases = offered(client)
    assert "Ready" not in phases
    assert phases == [
        "Pending",
        "Scheduled",
        "Running",
        "Succeeded",
        "Failed",
        "Timeout",
        "Cancelled",
    ]


def test_a_function_run_brings_ready_back(client):
    make_runtime()
    make_run(
        "f1",
        mode={"function": {"handler": "main.handle"}},
        source={"inline": "x", "inlinePath": "main.py"},
    )
    assert "Ready" in offered(client)


def test_the_filter_filters(client):
    make_runtime()
    make_run("r1")
    Run.objects.filter(name="r1").update(phase="Failed")
    make_run("r2")
    response = client.get(reverse("admin:scheduling_run_changelist"), {"phase__exact": "Failed"})
    assert [run.name for run in response.context["cl"].result_list] == ["r1"]


def test_add_run_starts_from_a_manifest_that_creates_a_run_as_it_is(client):
    make_runtime(namespace="default")
    add = reverse("admin:scheduling_run_add")
    text = client.get(add).context["adminform"].form.initial["manifest"]
    assert "name: ''" not in text and "spec: {}" not in text
    assert "runtime: bash" in text and "inline: |" in text
    for _ in range(2):  # generateName: the same example works again
        response = client.post(add, {"manifest": text, "_save": "Save"})
        assert response.status_code == 302, response.context["adminform"].form.errors
    runs = list(Run.objects.all())
    assert len(runs) == 2 and all(run.name.startswith("hello-") for run in runs)
    assert runs[0].spec["mode"] == {"task": {}}
