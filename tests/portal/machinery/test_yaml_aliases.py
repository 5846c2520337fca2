"""YAML aliases are bounded wherever YAML is read (API bodies, the admin editor, ``apply -f``):
an alias bomb is refused at once with kube-apiserver's words, "excessive aliasing", and
ordinary anchors, aliases and merge keys keep working."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from portal.machinery.yaml import load_all, load_one
from portal.machinery.yaml_aliases import MAX_ALIAS_USES, MAX_ALIASED_CHARS
from scheduling.models import Run
from tests.helpers.api import assert_status, widgets
from tests.helpers.commands import run as run_command
from tests.helpers.records import make_run, make_runtime
from tests.helpers.workflows import url
from workflows.models import Workflow

pytestmark = pytest.mark.django_db
REFUSED_WITHIN = 0.1  # seconds of this thread's CPU for the whole request
WEBHOOK = "/apis/admission.kruntimes.io/v1/validate"  # kube-apiserver sends JSON only


def ladder(levels: int, indent: str = "") -> str:
    """A billion-laughs list: each level nine aliases of the one before (9**levels "lol"s)."""
    lines = [f"{indent}- &l0 [{', '.join(['lol'] * 9)}]"]
    lines += [f"{indent}- &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return "\n".join(lines)


def uses(count: int) -> str:
    return "a: &a x\nb: [" + ", ".join(["*a"] * count) + "]\n"


def refused_as_aliasing(text: str) -> str:
    with pytest.raises(ValueError, match="excessive aliasing") as caught:
        load_all(text)
    return str(caught.value)


@pytest.mark.parametrize("levels", [8, 9])
def test_a_billion_laughs_is_refused_in_the_loader_at_once(levels):
    started = time.thread_time()
    refused_as_aliasing(f"x:\n{ladder(levels, '  ')}\n")
    assert time.thread_time() - started < REFUSED_WITHIN


def test_alias_uses_up_to_the_limit_load():
    assert len(load_one(uses(MAX_ALIAS_USES))["b"]) == MAX_ALIAS_USES
    assert "more than 10000 alias uses" in refused_as_aliasing(uses(MAX_ALIAS_USES + 1))


def test_aliases_inside_aliased_content_count_each_time_they_are_expanded():
    # 100 uses of a list of 100 aliases: 200 alias nodes written, 10,100 uses once expanded
    text = "a: &a x\nb: &b [" + ", ".join(["*a"] * 100) + "]\nc: [" + ", ".join(["*b"] * 99)
    assert len(load_one(text + "]")["c"]) == 99
    refused_as_aliasing(text + ", *b]")


def test_aliased_content_up_to_the_limit_loads():
    # a scalar counts its characters plus one, a list one more for itself
    big = "x" * (MAX_ALIASED_CHARS - 1)
    assert load_one(f"a: &a {big}\nb: *a\n")["b"] == big
    text = f"a: &a {big}x\nb: *a\n"
    assert f"more than {MAX_ALIASED_CHARS} characters" in refused_as_aliasing(text)


def test_a_large_document_without_aliases_is_not_bounded_by_the_alias_limit():
    text = "a: [" + ", ".join(["x" * 1000] * 1000) + "]\n"
    assert len(load_one(text)["a"]) == 1000


@pytest.mark.parametrize("text", ["a: &a [*a]", "a: &a {b: *a}", "a: &a [x, {b: [*a]}]"])
def test_an_alias_inside_its_own_anchor_is_refused(text):
    assert "refers to a node that contains it" in refused_as_aliasing(text)


def test_merge_keys_still_merge_and_the_mapping_overrides_them():
    text = (
        "base: &base {image: python, size: 1}\n"
        "more: &more {size: 2, color: red}\n"
        "one:\n  <<: *base\n  size: 3\n"
        "two:\n  <<: [*more, *base]\n  image: bash\n"
    )
    document = load_one(text)
    assert document["one"] == {"image": "python", "size": 3}
    # the mapping's own keys win, then the first merged mapping over the later ones
    assert document["two"] == {"size": 2, "color": "red", "image": "bash"}


def test_a_duplicate_key_beside_a_merge_is_still_refused():
    with pytest.raises(ValueError, match='duplicate field "size"'):
        load_all("base: &b {size: 1}\none: {<<: *b, size: 2, size: 3}\n")


def test_a_merge_key_bomb_is_refused():
    lines = ["m0: &m0 {a: 1, b: 2, c: 3}"]
    lines += [f"m{i}: &m{i} [{', '.join([f'*m{i - 1}'] * 9)}]" for i in range(1, 6)]
    refused_as_aliasing("\n".join(lines) + "\nx: {<<: *m1, y: *m5}\n")


def test_each_document_of_a_stream_is_bounded():
    refused_as_aliasing(f"a: 1\n---\nx:\n{ladder(8, '  ')}\n")


def post_yaml(client, path: str, text: str):
    client.post(path, "{}", content_type="application/yaml")  # the first request's imports
    started = time.thread_time()
    response = client.post(path, text, content_type="application/yaml")
    return response, time.thread_time() - started


def assert_refused(response, spent: float) -> None:
    body = assert_status(response, 400, "BadRequest")
    assert "excessive aliasing" in body["message"]
    assert spent < REFUSED_WITHIN, spent


@pytest.mark.parametrize("levels", [8, 9])
def test_a_bomb_to_selfsubjectaccessreviews_is_refused_for_any_token_holder(user_api, levels):
    text = (
        "apiVersion: authorization.k8s.io/v1\nkind: SelfSubjectAccessReview\n"
        f"spec:\n  nonResourceAttributes:\n    verb: get\n    path:\n{ladder(levels, '    ')}\n"
    )
    response, spent = post_yaml(
        user_api, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", text
    )
    assert_refused(response, spent)


@pytest.mark.parametrize("levels", [8, 9])
def test_a_bomb_in_a_workflow_step_run_is_refused(admin_api, levels):
    text = (
        "apiVersion: kruntimes.io/v1alpha1\nkind: Workflow\nmetadata: {name: bomb}\n"
        "spec:\n  jobs:\n    a:\n      runs-on: bash\n      steps:\n      - name: s\n"
        f"        run:\n{ladder(levels, '        ')}\n"
    )
    response, spent = post_yaml(admin_api, url("workflows"), text)
    assert_refused(response, spent)
    assert not Workflow.objects.exists()


def test_anchors_and_merge_keys_in_an_api_body_are_read(admin_api):
    text = (
        "apiVersion: testing.kruntimes.io/v1\nkind: Widget\n"
        "metadata:\n  name: merged\n  labels: &labels {app: web, tier: a}\n"
        "  annotations:\n    <<: *labels\n    tier: b\nspec: {size: 2}\n"
    )
    response = admin_api.post(widgets(), text, content_type="application/yaml")
    assert response.status_code == 201, response.json()
    metadata = response.json()["metadata"]
    assert metadata["labels"] == {"app": "web", "tier": "a"}
    assert metadata["annotations"] == {"app": "web", "tier": "b"}


def test_apply_refuses_a_bomb_and_writes_nothing(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(
        "apiVersion: testing.kruntimes.io/v1\nkind: Widget\nmetadata: {name: w}\n"
        f"spec:\n  size: 1\n  deep:\n{ladder(9, '  ')}\n"
    )
    started = time.thread_time()
    result = run_command("apply", "-f", str(path))
    assert time.thread_time() - started < REFUSED_WITHIN
    assert result.code == 1 and "excessive aliasing" in result.err
    assert run_command("get", "widgets").out.count("\n") <= 1


def test_the_admin_editor_refuses_a_bomb_and_writes_nothing(client, admin_user):
    client.force_login(admin_user)
    make_runtime()
    run = make_run("r1")
    page = reverse("admin:scheduling_run_change", args=[run.pk])
    form = client.get(page).context["adminform"].form
    text = form.initial["manifest"].rstrip("\n") + f"\nbomb:\n{ladder(9, '  ')}\n"
    started = time.thread_time()
    response = client.post(
        page,
        {
            "manifest": text,
            "loaded_resource_version": form.initial["loaded_resource_version"],
            "_save": "Save",
        },
    )
    assert time.thread_time() - started < REFUSED_WITHIN
    errors = " ".join(str(e) for e in response.context["adminform"].form.errors["manifest"])
    assert "excessive aliasing" in errors
    assert Run.objects.get(pk=run.pk).resource_version == run.resource_version


@pytest.mark.parametrize("content_type", ["application/json", "application/yaml"])
def test_the_webhook_reads_only_json_so_a_bomb_is_a_bad_request(admin_api, content_type):
    text = f"apiVersion: admission.k8s.io/v1\nkind: AdmissionReview\nrequest:\n{ladder(9, '  ')}\n"
    admin_api.post(WEBHOOK, "{}", content_type="application/json")
    started = time.thread_time()
    response = admin_api.post(WEBHOOK, text, content_type=content_type)
    assert time.thread_time() - started < REFUSED_WITHIN
    assert_status(response, 400, "BadRequest")
    assert "not an AdmissionReview" in response.json()["message"]
