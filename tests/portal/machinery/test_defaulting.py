"""``ResourceKind.defaulting``: mutating admission on create. The hooks run after authorization
and before validation, see the writer and the namespace, may fill body fields, and their
causes are a 422; an update does not run them."""

from __future__ import annotations

import pytest

from portal.machinery import errors, store
from portal.machinery.errors import StatusError
from portal.machinery.registry import registry
from tests.helpers.api import widget, widgets
from tests.helpers.operator import OPERATOR
from tests.testapp.models import Widget

pytestmark = pytest.mark.django_db


@pytest.fixture
def calls(monkeypatch):
    """Widgets get ``spec.size: 4`` when they have none; each call is recorded."""
    seen: list[tuple[str | None, str]] = []

    def size_four(kind, manifest, namespace, context):
        seen.append((namespace, context.user_info.username))
        spec = manifest.setdefault("spec", {})
        if spec.get("size") == 7:
            return [errors.invalid("spec.size", "Invalid value: 7: the hook refuses 7")]
        spec.setdefault("size", 4)
        return []

    monkeypatch.setattr(registry.for_model(Widget), "defaulting", (size_four,))
    return seen


def test_a_hook_fills_fields_before_validation(admin_api, calls):
    manifest = widget("a", 1)
    del manifest["spec"]["size"]  # required: only the hook makes this valid
    created = admin_api.post(widgets(), manifest, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["spec"]["size"] == 4
    assert calls == [("default", "admin")]
    assert "size" not in manifest["spec"]  # the caller's manifest is not changed


def test_what_a_hook_fills_is_still_validated(monkeypatch):
    def too_big(kind, manifest, namespace, context):
        manifest["spec"]["size"] = 99
        return []

    kind = registry.for_model(Widget)
    monkeypatch.setattr(kind, "defaulting", (too_big,))
    with pytest.raises(StatusError) as raised:
        store.create(kind, widget("a", 1), context=OPERATOR)
    assert [c.field for c in raised.value.causes] == ["spec.size"]


def test_causes_of_a_hook_are_a_422_and_nothing_is_saved(admin_api, calls):
    response = admin_api.post(widgets(), widget("a", 7), format="json")
    assert response.status_code == 422
    assert [c["field"] for c in response.json()["details"]["causes"]] == ["spec.size"]
    assert not Widget.objects.exists()


def test_an_unauthorized_writer_never_reaches_a_hook(user_api, calls):
    assert user_api.post(widgets(), widget("a", 1), format="json").status_code == 403
    assert calls == []


def test_an_update_does_not_run_the_hooks(admin_api, calls):
    assert admin_api.post(widgets(), widget("a", 2), format="json").status_code == 201
    current = admin_api.get(f"{widgets()}/a").json()
    del current["spec"]["size"]
    assert admin_api.put(f"{widgets()}/a", current, format="json").status_code == 422
    assert len(calls) == 1
