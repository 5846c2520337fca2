"""An update's transition rules (immutability, one-way switches, the status strategy) and its
field rules answer together: one 422 Status whose causes each name their own field.

Every stored kind is classified here: a kind with transition rules has a case (a change that
breaks one, a change that breaks a field rule), a kind without them says so; a new kind fails
``test_every_kind_is_classified`` until it is one or the other.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from portal.machinery.manifest import merge_patch as combine
from portal.machinery.registry import ResourceKind, registry
from tests.helpers.jobclasses import GROUP as EXECUTION
from tests.helpers.jobclasses import class_manifest, job_manifest
from tests.helpers.runs import run_manifest
from tests.helpers.secrets import b64, config_map, secret
from tests.helpers.workflows import job, step, workflow_run_manifest
from tests.helpers.workspaces import workspace_manifest

pytestmark = pytest.mark.django_db

IMMUTABLE = "field is immutable"
IMMUTABLE_SET = "field is immutable when `immutable` is set"
BAD_LABEL = {"metadata": {"labels": {"app": "-not a label value-"}}}
RBAC = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class Case:
    manifest: Callable[[], dict]
    change: dict  # a merge patch breaking a transition rule
    transition: tuple[str, str]  # its cause: (field, message), the message as the kind has it
    broken: dict = field(default_factory=lambda: BAD_LABEL)  # a merge patch breaking a field rule
    field_path: str = "metadata.labels[app]"  # the field rule's cause
    valid: dict = field(default_factory=lambda: {"metadata": {"labels": {"app": "ok"}}})


def _binding(kind: str) -> Callable[[], dict]:
    def manifest() -> dict:
        return {
            "apiVersion": f"{RBAC}/v1",
            "kind": kind,
            "metadata": {"name": "x"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "alice"}],
        }

    return manifest


def _changed_binding() -> dict:
    return {"roleRef": {"name": "edit"}}


CASES: dict[str, Case] = {
    "runs.kruntimes.io": Case(
        lambda: run_manifest("x"),
        {"spec": {"mode": {"task": {"args": ["other"]}}}},
        ("spec.mode", IMMUTABLE),
        {"spec": {"ttlSecondsAfterFinished": -1}},
        "spec.ttlSecondsAfterFinished",
        {"spec": {"ttlSecondsAfterFinished": 30}},
    ),
    "persistentworkspaces.kruntimes.io": Case(
        lambda: workspace_manifest("x"),
        {"spec": {"runtime": "other"}},
        ("spec.runtime", IMMUTABLE),
        {"spec": {"ttlSecondsAfterUnused": -1}},
        "spec.ttlSecondsAfterUnused",
        {"spec": {"ttlSecondsAfterUnused": 60}},
    ),
    "workflowruns.kruntimes.io": Case(
        lambda: workflow_run_manifest("x"),
        {"spec": {"jobs": {"build": job(step(run="echo changed"))}}},
        ("spec.jobs", IMMUTABLE),
    ),
    f"jobclasses.{EXECUTION}": Case(
        lambda: class_manifest("x"),
        {"spec": {"controllerName": "example.com/other"}},
        ("spec.controllerName", "field is immutable: create a new JobClass to use another backend"),
        {"spec": {"allowedNamespaces": {"matchLabels": {"team": "-bad value-"}}}},
        "spec.allowedNamespaces.matchLabels[team]",
        {"spec": {"allowedNamespaces": {"matchLabels": {"team": "a"}}}},
    ),
    f"jobs.{EXECUTION}": Case(
        lambda: job_manifest("x"),
        {"spec": {"image": "busybox:1.37"}},
        ("spec.image", "field is immutable: only cancelRequested may change"),
    ),
    "configmaps": Case(
        lambda: config_map("x", {"k": "v"}, immutable=True),
        {"data": {"k": "w"}},
        ("data", IMMUTABLE_SET),
    ),
    "secrets": Case(
        lambda: secret("x", {"a": b64("v")}, immutable=True),
        {"data": {"a": b64("w")}},
        ("data", IMMUTABLE_SET),
    ),
    f"rolebindings.{RBAC}": Case(
        _binding("RoleBinding"),
        _changed_binding(),
        ("roleRef", "cannot change roleRef"),
        {"subjects": [{"kind": "Robot", "name": "alice"}]},
        "subjects[0].kind",
        {"subjects": [{"kind": "User", "name": "bob"}]},
    ),
    f"clusterrolebindings.{RBAC}": Case(
        _binding("ClusterRoleBinding"),
        _changed_binding(),
        ("roleRef", "cannot change roleRef"),
        {"subjects": [{"kind": "Robot", "name": "alice"}]},
        "subjects[0].kind",
        {"subjects": [{"kind": "User", "name": "bob"}]},
    ),
    "controllerrevisions.apps": Case(
        lambda: {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {"name": "x"},
            "data": {"jobs": {"a": {}}},
            "revision": 1,
        },
        {"data": {"jobs": {"b": {}}}},
        ("data", IMMUTABLE),
        {"revision": -1},
        "revision",
        {"revision": 2},
    ),
    "widgets.testing.kruntimes.io": Case(
        lambda: {
            "apiVersion": "testing.kruntimes.io/v1",
            "kind": "Widget",
            "metadata": {"name": "x"},
            "spec": {"size": 1, "color": "blue"},
        },
        {"spec": {"color": "green"}},
        ("spec.color", IMMUTABLE),
        {"spec": {"size": 99}},
        "spec.size",
        {"spec": {"size": 2}},
    ),
}

# Stored kinds whose updates have no transition rule of their own (the metadata's, such as no
# new finalizers on a terminating object, hold for every kind: test_terminating_object_*).
WITHOUT_TRANSITION_RULES = {
    "namespaces",
    "events",
    f"roles.{RBAC}",
    f"clusterroles.{RBAC}",
    "runtimes.kruntimes.io",
    "workflows.kruntimes.io",  # its validator (call cycles) compares no old object
    "actions.kruntimes.io",
    f"kubernetesexecutionparameters.{EXECUTION}",
    f"opensandboxexecutionparameters.{EXECUTION}",
    f"localexecutionparameters.{EXECUTION}",
    "gadgets.testing.kruntimes.io",
}


def _url(kind: ResourceKind, name: str = "") -> str:
    base = f"/apis/{kind.group}/{kind.version}" if kind.group else f"/api/{kind.version}"
    base += f"/namespaces/default/{kind.plural}" if kind.namespaced else f"/{kind.plural}"
    return f"{base}/{name}" if name else base


def _merge_patch(client, url: str, body: dict):
    return client.patch(url, json.dumps(body), content_type="application/merge-patch+json")


def _causes(response) -> list[tuple[str, str]]:
    assert response.status_code == 422, response.json()
    body = response.json()
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "Invalid", 422)
    return [(c["field"], c["message"]) for c in body["details"]["causes"]]


@pytest.fixture(params=sorted(CASES))
def case(request, admin_api):
    kind = registry.lookup(request.param)
    assert kind is not None, request.param
    the_case = CASES[request.param]
    created = admin_api.post(_url(kind), the_case.manifest(), format="json")
    assert created.status_code == 201, created.json()
    return kind, the_case, _url(kind, "x"), created.json()


def test_every_kind_is_classified():
    stored = {kind.key for kind in registry.stored()}
    assert set(CASES) | WITHOUT_TRANSITION_RULES == stored
    assert not set(CASES) & WITHOUT_TRANSITION_RULES


def test_a_transition_rule_and_a_field_rule_answer_in_one_422(admin_api, case):
    kind, the_case, url, before = case
    response = _merge_patch(admin_api, url, combine(the_case.change, the_case.broken))
    found = _causes(response)
    assert the_case.transition in found, found
    assert any(path == the_case.field_path for path, _ in found), found
    assert len(found) == len(set(found))  # each cause once
    # the field rule's cause comes first, then the transition rule's: the same every time
    fields = [path for path, _ in found]
    assert fields.index(the_case.field_path) < fields.index(the_case.transition[0])
    assert _causes(_merge_patch(admin_api, url, combine(the_case.change, the_case.broken))) == (
        found
    )
    assert admin_api.get(url).json() == before


def test_a_transition_rule_alone_is_reported_alone(admin_api, case):
    kind, the_case, url, before = case
    response = _merge_patch(admin_api, url, the_case.change)
    assert _causes(response) == [the_case.transition]
    assert admin_api.get(url).json() == before


def test_a_field_rule_alone_is_reported_alone(admin_api, case):
    kind, the_case, url, before = case
    found = _causes(_merge_patch(admin_api, url, the_case.broken))
    assert the_case.transition not in found
    assert {path for path, _ in found} == {the_case.field_path}


def test_a_valid_update_still_works(admin_api, case):
    kind, the_case, url, before = case
    response = _merge_patch(admin_api, url, the_case.valid)
    assert response.status_code == 200, json.dumps(response.json())
    assert response.json()["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]


def test_a_put_answers_every_cause_too(admin_api, case):
    kind, the_case, url, before = case
    body = combine(combine(before, the_case.change), the_case.broken)
    found = _causes(admin_api.put(url, body, format="json"))
    assert the_case.transition in found
    assert any(path == the_case.field_path for path, _ in found), found
