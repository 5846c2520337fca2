"""The Run page for a person: what happened and the log on top, outputs next, spec/metadata/
YAML collapsed; Cancel, Retry (a new Run from the same spec, linked both ways) and Delete."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from portal.machinery.yaml import dump, load_one
from scheduling.admin.run_page import RETRY_OF
from scheduling.models import Run
from tests.helpers.records import make_run

pytestmark = pytest.mark.django_db


def change_url(run: Run) -> str:
    return reverse("admin:scheduling_run_change", args=[run.pk])


def finish(run: Run, phase: str = "Failed") -> Run:
    now = timezone.now()
    status = {
        **run.status,
        "phase": phase,
        "reason": "RuntimeExecute",
        "message": "exit 3",
        "startTime": (now - timedelta(seconds=90)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "completionTime": (now - timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    Run.objects.filter(pk=run.pk).update(
        phase=phase,
        status=status,
        finished_at=now - timedelta(seconds=30),
        creation_timestamp=now - timedelta(seconds=100),
    )
    return Run.objects.get(pk=run.pk)


def headings(page: str) -> list[str]:
    return re.findall(r"<h2[^>]*>(?:<[^>]+>)*([^<]+)<", page)


def test_what_happened_and_the_log_come_first_the_rest_collapsed(admin_client):
    run = finish(make_run("build", labels={"team": "a"}))
    page = admin_client.get(change_url(run)).content.decode()
    order = ["Run", "Log", "Outputs and artifacts", "Progress"]
    positions = [page.index(f">{title}</") for title in order]
    assert positions == sorted(positions)
    for title in ("Spec", "Metadata", "Labels and annotations", "Object (YAML)"):
        at = page.index(f">{title}</")
        assert page.rfind("<details", 0, at) > page.rfind("</details>", 0, at), title
        assert at > positions[-1]
    top = page[positions[0] : positions[1]]
    assert "RuntimeExecute" in top and "exit 3" in top
    assert "waited</span> <strong>10s" in top and "ran</span> <strong>60s" in top


def test_the_live_sections_and_the_watch_url_are_on_the_page(admin_client):
    run = make_run("build")
    page = admin_client.get(change_url(run)).content.decode()
    assert 'data-watch-url="/apis/kruntimes.io/v1alpha1/namespaces/default/runs?watch=true' in page
    assert "fieldSelector=metadata.name%3Dbuild" in page
    assert f'data-resource-version="{run.resource_version}"' in page and 'data-active="1"' in page
    assert page.count("data-live=") == 4  # Run, Outputs and artifacts, Progress, Events
    assert "/static/portal/live.js" in page and "https://" not in page.split("<body")[1]


def test_an_active_run_offers_cancel_and_cancel_asks_the_store(admin_client):
    run = make_run("build")
    page = admin_client.get(change_url(run)).content.decode()
    assert 'id="run-cancel"' in page and 'id="run-retry"' not in page and 'id="run-delete"' in page
    response = admin_client.post(reverse("admin:scheduling_run_cancel", args=[run.pk]))
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.cancel_requested
    assert 'id="run-cancel"' not in admin_client.get(change_url(run)).content.decode()


def test_retry_creates_a_new_run_from_the_same_spec_linked_both_ways(admin_client):
    run = finish(make_run("build", labels={"team": "a"}, timeout="5m"))
    Run.objects.filter(pk=run.pk).update(
        spec={**run.spec, "cancelRequested": True}, cancel_requested=True
    )
    page = admin_client.get(change_url(run)).content.decode()
    assert 'id="run-retry"' in page and 'id="run-cancel"' not in page
    response = admin_client.post(reverse("admin:scheduling_run_retry", args=[run.pk]))
    (retry,) = Run.objects.exclude(pk=run.pk)
    assert response.status_code == 302 and response["Location"] == change_url(retry)
    assert retry.name.startswith("build-retry-") and retry.phase == "Pending"
    assert retry.annotations[RETRY_OF] == "build" and retry.labels[RETRY_OF] == "build"
    assert retry.labels["team"] == "a"
    original = Run.objects.get(pk=run.pk)
    expected = {k: v for k, v in original.spec.items() if k != "cancelRequested"}
    assert {k: v for k, v in retry.spec.items() if k != "cancelRequested"} == expected
    assert not retry.cancel_requested
    new_page = admin_client.get(change_url(retry)).content.decode()
    assert f'retry of</span> <a href="{change_url(run)}">build</a>' in new_page
    old_page = admin_client.get(change_url(run)).content.decode()
    assert f'retried as</span> <a href="{change_url(retry)}">{retry.name}</a>' in old_page


def test_a_finished_run_has_no_save_button_and_an_active_one_does(admin_client):
    active = make_run("active")
    assert 'name="_save"' in admin_client.get(change_url(active)).content.decode()
    done = finish(make_run("done"), phase="Succeeded")
    page = admin_client.get(change_url(done)).content.decode()
    assert 'name="_save"' not in page and 'id="run-retry"' in page
    assert admin_client.post(change_url(done), {"manifest": "x"}).status_code == 403


def test_retry_and_cancel_take_only_a_post(admin_client):
    run = finish(make_run("build"))
    assert admin_client.get(reverse("admin:scheduling_run_retry", args=[run.pk])).status_code == 405
    assert Run.objects.count() == 1


def test_retry_needs_the_add_permission(client, django_user_model):
    from django.contrib.auth.models import Permission  # noqa: PLC0415

    run = finish(make_run("build"))
    viewer = django_user_model.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_run"))
    client.force_login(viewer)
    assert 'id="run-retry"' not in client.get(change_url(run)).content.decode()
    assert client.post(reverse("admin:scheduling_run_retry", args=[run.pk])).status_code == 403
    assert Run.objects.count() == 1


def test_the_run_list_is_newest_first(admin_client):
    make_run("first")
    make_run("second")
    listing = admin_client.get(reverse("admin:scheduling_run_changelist"))
    assert [r.name for r in listing.context["cl"].result_list] == ["second", "first"]


def test_an_edit_changing_the_mode_and_breaking_a_field_rule_shows_both(admin_client):
    run = make_run("build")
    form = admin_client.get(change_url(run)).context["adminform"].form
    manifest = load_one(form.initial["manifest"])
    manifest["spec"]["mode"] = {"task": {"args": ["other"]}}
    manifest["spec"]["ttlSecondsAfterFinished"] = -1
    response = admin_client.post(
        change_url(run),
        {
            "manifest": dump(manifest),
            "loaded_resource_version": form.initial["loaded_resource_version"],
            "_save": "Save",
        },
    )
    assert response.status_code == 200
    errors = [str(e) for errs in response.context["adminform"].form.errors.values() for e in errs]
    assert [e.split(":")[0] for e in errors] == ["spec.ttlSecondsAfterFinished", "spec.mode"]
    assert "field is immutable" in errors[1]
    assert Run.objects.get(pk=run.pk).resource_version == run.resource_version
