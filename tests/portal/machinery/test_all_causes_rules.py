"""How the store runs an object's rules beside its field rules: the status strategy and the
metadata's transition rules too, on the body as far as it validates (defaults filled in), not
on an object a type error left unreadable, and each cause once."""

from __future__ import annotations

import json

import pytest

from portal.machinery import errors
from portal.machinery.best_effort import body_value
from portal.machinery.registry import registry
from tests.helpers.runs import run_manifest, runs_url
from tests.helpers.secrets import b64, secret, secrets_url
from tests.testapp.kinds import WidgetSpecSerializer

pytestmark = pytest.mark.django_db

RUN = f"{runs_url()}/r"
WIDGETS = "/apis/testing.kruntimes.io/v1/namespaces/default/widgets"
TTL_NEGATIVE = "Ensure this value is greater than or equal to 0."


def _merge_patch(client, url: str, body: dict):
    return client.patch(url, json.dumps(body), content_type="application/merge-patch+json")


def _causes(response) -> list[tuple[str, str]]:
    assert response.status_code == 422, response.json()
    return [(c["field"], c["message"]) for c in response.json()["details"]["causes"]]


@pytest.fixture
def run(admin_api) -> dict:
    response = admin_api.post(runs_url(), run_manifest("r"), format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def _widget(admin_api, **metadata) -> dict:
    manifest = {
        "apiVersion": "testing.kruntimes.io/v1",
        "kind": "Widget",
        "metadata": {"name": "w", **metadata},
        "spec": {"size": 1, "color": "blue"},
    }
    response = admin_api.post(WIDGETS, manifest, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def test_a_run_changing_its_mode_and_breaking_a_field_rule(admin_api, run):
    response = _merge_patch(
        admin_api,
        RUN,
        {"spec": {"mode": {"task": {"args": ["other"]}}, "ttlSecondsAfterFinished": -1}},
    )
    body = response.json()
    assert (body["code"], body["reason"], body["details"]["name"]) == (422, "Invalid", "r")
    assert _causes(response) == [
        ("spec.ttlSecondsAfterFinished", TTL_NEGATIVE),
        ("spec.mode", "field is immutable"),
    ]
    assert body["message"] == (
        'Run.kruntimes.io "r" is invalid: spec.ttlSecondsAfterFinished: '
        f"{TTL_NEGATIVE}, spec.mode: field is immutable"
    )


def test_the_rules_compare_the_defaulted_body(admin_api, run):
    """A PUT leaving out a defaulted field (the Run's resources) changes nothing there: the
    rules see the default, not a removal, though the spec as a whole failed."""
    live = admin_api.get(RUN).json()
    assert live["spec"]["resources"]
    del live["spec"]["resources"]
    live["spec"]["ttlSecondsAfterFinished"] = -1
    assert _causes(admin_api.put(RUN, live, format="json")) == [
        ("spec.ttlSecondsAfterFinished", TTL_NEGATIVE)
    ]


def test_a_type_error_leaves_the_rules_unchecked(admin_api, run):
    """As a CRD's validation rules wait for a well-typed object: nothing to compare yet."""
    response = _merge_patch(
        admin_api,
        RUN,
        {"spec": {"mode": {"task": {"args": ["other"]}}, "ttlSecondsAfterFinished": "soon"}},
    )
    assert [field for field, _ in _causes(response)] == ["spec.ttlSecondsAfterFinished"]


def test_the_status_strategy_answers_with_the_status_field_rules(admin_api, run):
    done = {**run, "status": {"phase": "Succeeded"}}
    assert admin_api.put(f"{RUN}/status", done, format="json").status_code == 200
    response = _merge_patch(
        admin_api, f"{RUN}/status", {"status": {"phase": "Running", "attempt": 0}}
    )
    assert _causes(response) == [
        ("status.attempt", "Ensure this value is greater than or equal to 1."),
        ("status.phase", 'Invalid value: "Running": may not change once the Run is Succeeded'),
    ]


def test_no_new_finalizer_on_a_terminating_object_answers_with_the_field_rules(admin_api):
    _widget(admin_api, finalizers=["example.com/keep"])
    assert admin_api.delete(f"{WIDGETS}/w").status_code == 200
    response = _merge_patch(
        admin_api,
        f"{WIDGETS}/w",
        {
            "metadata": {"finalizers": ["example.com/keep", "example.com/more"]},
            "spec": {"size": 99},
        },
    )
    found = _causes(response)
    assert [field for field, _ in found] == ["spec.size", "metadata.finalizers"]
    assert found[1][1].startswith("no new finalizers can be added if the object is being deleted")


def test_a_terminating_namespace_too(admin_api):
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}}
    ns["metadata"]["finalizers"] = ["example.com/keep"]
    assert admin_api.post("/api/v1/namespaces", ns, format="json").status_code == 201
    assert admin_api.delete("/api/v1/namespaces/t").status_code == 200
    response = _merge_patch(
        admin_api,
        "/api/v1/namespaces/t",
        {"metadata": {"finalizers": ["example.com/keep", "x.com/y"], "labels": {"a": "-b-"}}},
    )
    assert [field for field, _ in _causes(response)] == [
        "metadata.labels[a]",
        "metadata.finalizers",
    ]


def test_a_cause_two_rules_report_is_named_once(admin_api, monkeypatch):
    """(The order stays the order of first report.)"""
    _widget(admin_api)
    kind = registry.get("testing.kruntimes.io", "v1", "widgets")
    too_big = "Ensure this value is less than or equal to 10."

    def size_rule(new, old):
        return [errors.invalid("spec.size", too_big)] if new["spec"]["size"] > 10 else []

    monkeypatch.setattr(kind, "validators", (size_rule, *kind.validators, size_rule))
    response = _merge_patch(admin_api, f"{WIDGETS}/w", {"spec": {"size": 99, "color": "red"}})
    assert _causes(response) == [("spec.size", too_big), ("spec.color", "field is immutable")]


def test_a_create_answers_the_kind_rules_with_the_field_rules(admin_api):
    manifest = secret("s", {"bad key!": b64("v")})
    manifest["metadata"]["labels"] = {"a": "-b-"}
    response = admin_api.post(secrets_url(), manifest, format="json")
    assert [field for field, _ in _causes(response)] == ["metadata.labels[a]", "data[bad key!]"]


def test_the_best_effort_body_keeps_what_validates_and_what_was_sent():
    sent = {"size": 99, "parts": [{"name": "a"}, {"name": "x" * 20}]}
    assert body_value(WidgetSpecSerializer, sent) == {
        "size": 99,  # failed: as sent
        "color": "red",  # absent: its default
        "parts": [{"name": "a", "count": 1}, {"name": "x" * 20, "count": 1}],
    }
    assert body_value(WidgetSpecSerializer, None) == {"color": "red"}
