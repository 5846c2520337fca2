"""Admission warnings: a kind's ``warnings`` hooks reach the writer as ``Warning: 299 - "text"``
headers (kube-apiserver's format, which kubectl prints), the write goes ahead; a warning is
given when a problem is written, not for each later write that leaves it; the admin shows them
after a save and on the object's page."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from portal.machinery import admission_warnings, store
from portal.machinery.registry import registry
from portal.machinery.yaml import dump
from tests.helpers.api import merge_patch, warnings_of, widget, widgets
from tests.helpers.operator import OPERATOR
from tests.testapp.models import Widget

pytestmark = pytest.mark.django_db


def note_warnings(manifest: dict) -> list[str]:
    """A Widget whose spec.note is set warns with the note's text (twice: kept once)."""
    note = (manifest.get("spec") or {}).get("note")
    return [f"spec.note: {note}", f"spec.note: {note}"] if note else []


def part_warnings(manifest: dict) -> list[str]:
    return [f"spec.parts[{i}]: a part" for i, _ in enumerate(manifest["spec"].get("parts") or [])]


@pytest.fixture(autouse=True)
def warning_widgets(monkeypatch):
    kind = registry.for_model(Widget)
    monkeypatch.setattr(kind, "warnings", (note_warnings, part_warnings))
    return kind


def test_a_create_answers_a_warning_header_per_problem_and_goes_ahead(admin_api):
    body = widget("w", note="check me", parts=[{"name": "a"}, {"name": "b"}])
    response = admin_api.post(widgets(), body, format="json")
    assert response.status_code == 201, response.json()
    assert response.headers["Warning"].startswith('299 - "spec.note: check me", 299 - "')
    assert warnings_of(response) == [
        "spec.note: check me",
        "spec.parts[0]: a part",
        "spec.parts[1]: a part",
    ]
    assert Widget.objects.filter(name="w").exists()


def test_no_warning_no_header(admin_api):
    response = admin_api.post(widgets(), widget("w"), format="json")
    assert response.status_code == 201
    assert "Warning" not in response.headers


def test_a_dry_run_warns_as_the_write_would(admin_api):
    response = admin_api.post(f"{widgets()}?dryRun=All", widget("w", note="x"), format="json")
    assert response.status_code == 201
    assert warnings_of(response) == ["spec.note: x"]
    assert not Widget.objects.filter(name="w").exists()


def test_an_update_warns_only_of_what_it_introduces(admin_api):
    admin_api.post(widgets(), widget("w", note="old"), format="json")
    same = merge_patch(admin_api, f"{widgets()}/w", {"spec": {"size": 2}})
    assert same.status_code == 200 and "Warning" not in same.headers
    changed = merge_patch(admin_api, f"{widgets()}/w", {"spec": {"note": "new"}})
    assert warnings_of(changed) == ["spec.note: new"]
    put = admin_api.put(
        f"{widgets()}/w", widget("w", note="new", parts=[{"name": "a"}]), format="json"
    )
    assert warnings_of(put) == ["spec.parts[0]: a part"]


def test_a_status_write_gives_no_warning(admin_api):
    admin_api.post(widgets(), widget("w", note="n"), format="json")
    response = merge_patch(admin_api, f"{widgets()}/w/status", {"status": {"phase": "Ready"}})
    assert response.status_code == 200, response.json()
    assert "Warning" not in response.headers


def test_a_refused_write_answers_its_status_without_warnings(admin_api):
    response = admin_api.post(widgets(), widget("w", size=99, note="n"), format="json")
    assert response.status_code == 422
    assert "Warning" not in response.headers


def test_quotes_backslashes_and_unprintable_characters_survive_the_header(admin_api):
    note = 'say "hi" \\ now\té'
    response = admin_api.post(widgets(), widget("w", note=note), format="json")
    assert response.headers["Warning"] == '299 - "spec.note: say \\"hi\\" \\\\ now??"'
    assert warnings_of(response) == ['spec.note: say "hi" \\ now??']


def test_the_header_is_bounded_as_kube_apiserver_bounds_it():
    assert admission_warnings.limited(["a" * 300] * 3) == ["a" * 300] * 3  # 900: as they are
    cut = admission_warnings.limited(["a" * 300] * 20)  # 6000: each to 256, then 16 fit
    assert cut == ["a" * 256] * 16
    assert admission_warnings.limited(["b" * 5000]) == ["b" * 256]


def test_a_write_nobody_records_computes_nothing(warning_widgets, monkeypatch):
    asked = []
    monkeypatch.setattr(warning_widgets, "warnings", (lambda manifest: asked.append(1) or [],))
    store.create(warning_widgets, widget("w", note="n"), namespace="default", context=OPERATOR)
    assert asked == []
    with admission_warnings.recording():
        store.create(warning_widgets, widget("v"), namespace="default", context=OPERATOR)
    assert asked == [1]


def test_the_store_records_for_every_writer(warning_widgets):
    with admission_warnings.recording() as recorded:
        store.create(warning_widgets, widget("w", note="n"), namespace="default", context=OPERATOR)
    assert recorded == ["spec.note: n"]


# ------------------------------------------------------------------------------ the admin


@pytest.fixture
def console(client, admin_user):
    client.force_login(admin_user)
    return client


def test_the_admin_shows_the_warnings_of_a_save_as_messages(console):
    manifest = widget("w", note="look")
    manifest["metadata"]["namespace"] = "default"
    response = console.post(
        reverse("admin:testapp_widget_add"), {"manifest": dump(manifest), "_save": "Save"}
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    shown = [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]
    assert ("warning", "spec.note: look") in shown


def test_the_object_page_has_an_admission_warnings_section(console, warning_widgets):
    store.create(warning_widgets, widget("w", note="look"), namespace="default", context=OPERATOR)
    store.create(warning_widgets, widget("v"), namespace="default", context=OPERATOR)
    page = console.get(
        reverse("admin:testapp_widget_change", args=[Widget.objects.get(name="w").pk])
    )
    text = page.content.decode()
    assert "Admission warnings" in text and "spec.note: look" in text
    quiet = console.get(
        reverse("admin:testapp_widget_change", args=[Widget.objects.get(name="v").pk])
    )
    assert "Admission warnings" not in quiet.content.decode()
