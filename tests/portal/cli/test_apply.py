"""``manage.py apply``: create, configured/unchanged idempotence, every input shape, errors."""

from __future__ import annotations

import io
import json
import sys

import pytest

from portal.machinery import yaml
from portal.models import Namespace
from tests.helpers.commands import WIDGET_YAML, run, widget
from tests.testapp.models import Gadget, Widget

pytestmark = pytest.mark.django_db

KEY = "widgets.testing.kruntimes.io"


def write(path, documents) -> str:
    path.write_text(documents if isinstance(documents, str) else yaml.dump_all(documents))
    return str(path)


def test_create_then_unchanged_keeps_resource_version(tmp_path):
    path = write(tmp_path / "w.yaml", WIDGET_YAML.format(name="w1", size=3))

    first = run("apply", "-f", path)
    assert (first.code, first.out, first.err) == (0, f"{KEY}/w1 created\n", "")
    live = Widget.objects.get(namespace="default", name="w1")
    assert live.spec == {"size": 3, "color": "red"}

    again = run("apply", "-f", path)
    assert (again.code, again.out, again.err) == (0, f"{KEY}/w1 unchanged\n", "")
    after = Widget.objects.get(pk=live.pk)
    assert after.resource_version == live.resource_version
    assert after.generation == live.generation == 1


def test_spec_change_is_configured_and_bumps_generation(tmp_path):
    path = tmp_path / "w.yaml"
    run("apply", "-f", write(path, WIDGET_YAML.format(name="w1", size=3)))
    before = Widget.objects.get(name="w1")

    result = run("apply", "-f", write(path, WIDGET_YAML.format(name="w1", size=4)))

    assert (result.code, result.out) == (0, f"{KEY}/w1 configured\n")
    after = Widget.objects.get(pk=before.pk)
    assert after.spec["size"] == 4
    assert after.generation == before.generation + 1
    assert after.resource_version == before.resource_version + 1
    assert run("apply", "-f", str(path)).out == f"{KEY}/w1 unchanged\n"


def test_label_change_is_configured_without_generation_bump(tmp_path):
    path = tmp_path / "w.yaml"
    run("apply", "-f", write(path, [widget("w1", metadata={"labels": {"app": "a"}})]))
    before = Widget.objects.get(name="w1")

    result = run(
        "apply",
        "-f",
        write(
            path, [widget("w1", metadata={"labels": {"app": "b"}, "annotations": {"note": "x"}})]
        ),
    )

    assert result.out == f"{KEY}/w1 configured\n"
    after = Widget.objects.get(pk=before.pk)
    assert (after.labels, after.annotations) == ({"app": "b"}, {"note": "x"})
    assert after.generation == before.generation
    # a merge patch: a label the manifest does not mention stays, null removes one
    run("apply", "-f", write(path, [widget("w1", metadata={"labels": {"app": None}})]))
    assert Widget.objects.get(pk=before.pk).labels == {}


def test_apply_never_touches_status(tmp_path):
    live = widget("w1")
    run("apply", "-f", write(tmp_path / "a.yaml", [live]))
    Widget.objects.filter(name="w1").update(status={"phase": "Ready"})

    result = run(
        "apply", "-f", write(tmp_path / "b.yaml", [{**live, "status": {"phase": "Pending"}}])
    )

    assert result.out == f"{KEY}/w1 unchanged\n"
    assert Widget.objects.get(name="w1").status == {"phase": "Ready"}


def test_multi_document_file(tmp_path):
    gadget = {
        "apiVersion": "testing.kruntimes.io/v1",
        "kind": "Gadget",
        "metadata": {"name": "g1"},
        "spec": {"size": 1},
    }
    text = (
        WIDGET_YAML.format(name="w1", size=1)
        + "---\n"
        + WIDGET_YAML.format(name="w2", size=2)
        + "---\n"
        + yaml.dump(gadget)
        + "---\n"
    )

    result = run("apply", "-f", write(tmp_path / "all.yaml", text))

    assert result.code == 0
    assert result.out.splitlines() == [
        f"{KEY}/w1 created",
        f"{KEY}/w2 created",
        "gadgets.testing.kruntimes.io/g1 created",
    ]
    assert Gadget.objects.filter(name="g1").exists()


def test_directory_applies_manifest_files_sorted_and_recursive_only_with_R(tmp_path):
    write(tmp_path / "b.yaml", [widget("from-b")])
    (tmp_path / "a.json").write_text(json.dumps(widget("from-a")))
    write(tmp_path / "c.yml", [widget("from-c")])
    (tmp_path / "notes.txt").write_text("not a manifest")
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub" / "d.yaml", [widget("from-d")])

    result = run("apply", "-f", str(tmp_path))

    assert result.out.splitlines() == [
        f"{KEY}/from-a created",
        f"{KEY}/from-b created",
        f"{KEY}/from-c created",
    ]
    assert not Widget.objects.filter(name="from-d").exists()
    recursive = run("apply", "-R", "-f", str(tmp_path))
    assert recursive.out.splitlines() == [
        f"{KEY}/from-a unchanged",
        f"{KEY}/from-b unchanged",
        f"{KEY}/from-c unchanged",
        f"{KEY}/from-d created",
    ]


def test_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(WIDGET_YAML.format(name="piped", size=2)))

    result = run("apply", "-f", "-")

    assert (result.code, result.out) == (0, f"{KEY}/piped created\n")
    assert Widget.objects.get(name="piped").spec["size"] == 2


def test_json_file_and_json_stream(tmp_path):
    single = tmp_path / "one.json"
    single.write_text(json.dumps(widget("j1", 5), indent=2))
    stream = tmp_path / "stream.json"
    stream.write_text(json.dumps(widget("j2")) + "\n" + json.dumps(widget("j3")))

    result = run("apply", "-f", str(single), "-f", str(stream))

    assert result.out.splitlines() == [
        f"{KEY}/j1 created",
        f"{KEY}/j2 created",
        f"{KEY}/j3 created",
    ]
    assert Widget.objects.get(name="j1").spec["size"] == 5


@pytest.mark.parametrize("as_json", [False, True])
def test_list_of_items(tmp_path, as_json):
    listing = {"apiVersion": "v1", "kind": "List", "items": [widget("l1"), widget("l2")]}
    path = tmp_path / "list.json"
    path.write_text(json.dumps(listing) if as_json else yaml.dump(listing))

    result = run("apply", "-f", str(path))

    assert result.out.splitlines() == [f"{KEY}/l1 created", f"{KEY}/l2 created"]


def test_namespace_and_object_in_one_file_namespace_first(tmp_path):
    documents = [
        widget("w1", metadata={"namespace": "team-a"}),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
    ]

    result = run("apply", "-f", write(tmp_path / "ns.yaml", documents))

    assert (result.code, result.err) == (0, "")
    assert result.out.splitlines() == ["namespaces/team-a created", f"{KEY}/w1 created"]
    assert Namespace.objects.filter(name="team-a").exists()
    assert Widget.objects.get(name="w1").namespace == "team-a"
    assert run("apply", "-f", str(tmp_path / "ns.yaml")).out.splitlines() == [
        "namespaces/team-a unchanged",
        f"{KEY}/w1 unchanged",
    ]


def test_invalid_document_among_valid_ones(tmp_path):
    documents = [widget("good-1"), widget("bad", size=99), widget("good-2")]

    result = run("apply", "-f", write(tmp_path / "mixed.yaml", documents))

    assert result.code == 1
    assert result.out.splitlines() == [f"{KEY}/good-1 created", f"{KEY}/good-2 created"]
    assert result.err.startswith(
        f'Error from server (Invalid): error when creating "{tmp_path / "mixed.yaml"}": '
        'Widget.testing.kruntimes.io "bad" is invalid: spec.size'
    )
    assert not Widget.objects.filter(name="bad").exists()


def test_invalid_update_is_reported_and_changes_nothing(tmp_path):
    path = tmp_path / "w.yaml"
    run("apply", "-f", write(path, [widget("w1")]))
    before = Widget.objects.get(name="w1")

    result = run("apply", "-f", write(path, [widget("w1", spec={"color": "blue"})]))

    assert result.code == 1
    assert result.out == ""
    assert "Error from server (Invalid): error when patching" in result.err
    assert "spec.color: field is immutable" in result.err
    after = Widget.objects.get(pk=before.pk)
    assert (after.spec, after.resource_version) == (before.spec, before.resource_version)


def test_cause_fields_missing_from_the_message_are_listed(tmp_path):
    result = run("apply", "-f", write(tmp_path / "w.yaml", [widget("w1", spec={"shape": "x"})]))

    assert result.code == 1
    assert "Error from server (Invalid)" in result.err
    assert "spec.shape" in result.err


def test_unknown_kind(tmp_path):
    documents = [
        {"apiVersion": "testing.kruntimes.io/v1", "kind": "Thing", "metadata": {"name": "t"}},
        widget("w1"),
    ]

    result = run("apply", "-f", write(tmp_path / "x.yaml", documents))

    assert result.code == 1
    assert (
        result.err == 'error: no kind "Thing" is registered for version "testing.kruntimes.io/v1"\n'
    )
    assert result.out == f"{KEY}/w1 created\n"


def test_missing_type_meta_and_non_objects(tmp_path):
    result = run("apply", "-f", write(tmp_path / "x.yaml", "metadata:\n  name: x\n---\n- 1\n"))

    assert result.code == 1
    assert result.err.splitlines() == [
        "error: error validating data: [apiVersion not set, kind not set]",
        "error: expected a Kubernetes object, got list",
    ]


def test_namespace_flag_and_mismatch(tmp_path):
    run(
        "apply",
        "-f",
        write(
            tmp_path / "ns.yaml",
            [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}],
        ),
    )

    result = run("apply", "-n", "other", "-f", write(tmp_path / "w.yaml", [widget("w1")]))
    assert result.out == f"{KEY}/w1 created\n"
    assert Widget.objects.get(name="w1").namespace == "other"

    mismatch = run(
        "apply",
        "-n",
        "default",
        "-f",
        write(tmp_path / "w2.yaml", [widget("w2", metadata={"namespace": "other"})]),
    )
    assert mismatch.code == 1
    assert (
        'the namespace from the provided object "other" does not match the namespace '
        '"default"' in mismatch.err
    )


def test_missing_namespace_is_not_found(tmp_path):
    result = run("apply", "-n", "nowhere", "-f", write(tmp_path / "w.yaml", [widget("w1")]))

    assert result.code == 1
    assert "Error from server (NotFound): error when creating" in result.err
    assert 'namespaces "nowhere" not found' in result.err


def test_cluster_scoped_kind_ignores_namespace(tmp_path):
    gadget = {
        "apiVersion": "testing.kruntimes.io/v1",
        "kind": "Gadget",
        "metadata": {"name": "g1", "namespace": "default"},
        "spec": {"size": 2},
    }

    result = run("apply", "-n", "default", "-f", write(tmp_path / "g.yaml", [gadget]))

    assert (result.code, result.out) == (0, "gadgets.testing.kruntimes.io/g1 created\n")


def test_dry_run_writes_nothing(tmp_path):
    path = write(tmp_path / "w.yaml", [widget("w1")])

    assert run("apply", "--dry-run", "-f", path).out == f"{KEY}/w1 created (dry run)\n"
    assert not Widget.objects.exists()

    run("apply", "-f", path)
    before = Widget.objects.get(name="w1")
    changed = write(tmp_path / "w2.yaml", [widget("w1", size=7)])
    assert (
        run("apply", "--dry-run=server", "-f", changed).out
        == f"{KEY}/w1 configured (server dry run)\n"
    )
    after = Widget.objects.get(pk=before.pk)
    assert (after.spec, after.resource_version) == (before.spec, before.resource_version)


def test_parse_error_and_missing_path(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [unclosed\n")
    good = write(tmp_path / "good.yaml", [widget("w1")])

    result = run("apply", "-f", str(broken), "-f", good)
    assert result.code == 1
    assert result.err.startswith(f"error: error parsing {broken}: YAML parse error")
    assert result.out == f"{KEY}/w1 created\n"

    missing = run("apply", "-f", good, "-f", str(tmp_path / "nope.yaml"))
    assert missing.code == 1
    assert missing.err == f'error: the path "{tmp_path / "nope.yaml"}" does not exist\n'
    assert missing.out == ""


def test_empty_input(tmp_path):
    result = run("apply", "-f", write(tmp_path / "empty.yaml", "---\n"))

    assert (result.code, result.err) == (1, "error: no objects passed to apply\n")


def test_generate_name_is_refused(tmp_path):
    result = run(
        "apply",
        "-f",
        write(tmp_path / "g.yaml", [{**widget(""), "metadata": {"generateName": "w-"}}]),
    )

    assert result.code == 1
    assert "cannot use generate name with apply" in result.err
    assert not Widget.objects.exists()
