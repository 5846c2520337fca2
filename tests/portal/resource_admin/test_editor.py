"""The admin's YAML editor: scripts as literal blocks that survive a save byte for byte, and a
refused write's causes shown next to the line of the field they name."""

from __future__ import annotations

import pytest
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portal.machinery import store
from portal.machinery.registry import registry
from portal.machinery.yaml import dump, load_one
from portal.models import ConfigMap
from portal.resource_admin.yaml_lines import field_line
from tests.helpers.operator import OPERATOR
from tests.helpers.records import make_run, make_runtime
from tests.helpers.secrets import config_map

pytestmark = pytest.mark.django_db
SCRIPT = 'set -e\nfor f in *; do\n\techo "$f"   \ndone\nécho ✓\n'


@pytest.fixture
def client(client, admin_user):
    client.force_login(admin_user)
    return client


def change_url(run) -> str:
    return reverse("admin:scheduling_run_change", args=[run.pk])


def editor_text(client, run) -> tuple[str, str]:
    form = client.get(change_url(run)).context["adminform"].form
    return form.initial["manifest"], form.initial["loaded_resource_version"]


def save(client, run, text, version):
    return client.post(
        change_url(run), {"manifest": text, "loaded_resource_version": version, "_save": "Save"}
    )


def test_the_editor_shows_a_script_as_a_literal_block(client):
    make_runtime()
    run = make_run("r1", source={"inline": SCRIPT})
    text, _ = editor_text(client, run)
    assert '    inline: |\n      set -e\n      for f in *; do\n      \techo "$f"   \n' in text


LINE = st.text(st.sampled_from(list("ab #:-|\t  \"'") + ["é", "日"]), max_size=10)
SCRIPTS = st.lists(LINE, min_size=2, max_size=5).map(lambda lines: "\n".join(lines) + "\n")


def config_map_change_url(obj) -> str:
    return reverse("admin:portal_configmap_change", args=[obj.pk])


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(script=SCRIPTS)
def test_a_script_edited_in_the_editor_is_stored_byte_for_byte(client, script):
    config = ConfigMap.objects.first() or store.create(
        registry.for_model(ConfigMap),
        config_map("scripts", {"run.sh": "echo hi\n"}),
        namespace="default",
        context=OPERATOR,
    )
    form = client.get(config_map_change_url(config)).context["adminform"].form
    manifest = load_one(form.initial["manifest"])
    manifest["data"]["run.sh"] = script
    response = client.post(
        config_map_change_url(config),
        {
            "manifest": dump(manifest),
            "loaded_resource_version": form.initial["loaded_resource_version"],
            "_save": "Save",
        },
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert ConfigMap.objects.get(pk=config.pk).data["run.sh"] == script
    again = client.get(config_map_change_url(config)).context["adminform"].form.initial
    assert load_one(again["manifest"])["data"]["run.sh"] == script
    assert "run.sh: |" in again["manifest"]


def test_a_refused_write_shows_each_cause_at_its_line(client):
    make_runtime()
    run = make_run("r1")
    text, version = editor_text(client, run)
    manifest = load_one(text)
    manifest["spec"]["runtime"] = "Not A Name"
    manifest["spec"]["timeout"] = "forever"
    edited = dump(manifest)
    response = save(client, run, edited, version)
    assert response.status_code == 200
    errors = [str(e) for e in response.context["adminform"].form.errors["manifest"]]
    lines = edited.splitlines()
    for field, value in (("spec.runtime", "Not A Name"), ("spec.timeout", "forever")):
        error = next(e for e in errors if e.startswith(field))
        line = field_line(edited, field)
        assert value in lines[line - 1]
        assert error.startswith(f"{field}: ") and f"(line {line})" in error
        assert 'class="k-error-line"' in error
    # both fields are also immutable: those causes come with the field rules' (and their lines)
    assert [e.split(":")[0] for e in errors] == [
        "spec.runtime",
        "spec.timeout",
        "spec.runtime",
        "spec.timeout",
    ]
    page = response.content.decode()
    assert page.count('class="k-yaml-excerpt"') == 4


FIELDS = (
    "metadata:\n"  # 1
    "  labels:\n"  # 2
    "    app.kubernetes.io/name: x\n"  # 3
    "spec:\n"  # 4
    "  env:\n"  # 5
    "  - {name: A}\n"  # 6
    "  - name: B\n"  # 7
)


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("spec.env[1].name", 7),
        ("spec.env[0]", 6),
        ("metadata.labels[app.kubernetes.io/name]", 3),
        ("spec.missing", 4),  # not there: the object that would hold it
        ("spec.env[7].name", 5),
        ("kind", None),
    ],
)
def test_field_lines(path, line):
    assert field_line(FIELDS, path) == line
