"""``manage.py delete``: by name, several, KIND/NAME, -f, not found, finalizers, cascade."""

from __future__ import annotations

import io
import sys

import pytest

from portal.models import Namespace
from tests.helpers.commands import apply, run, widget
from tests.testapp.models import Gadget, Widget

pytestmark = pytest.mark.django_db

KEY = "widgets.testing.kruntimes.io"


def gadget(name):
    return {
        "apiVersion": "testing.kruntimes.io/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": {"size": 1},
    }


def test_delete_one(tmp_path):
    apply(tmp_path, widget("w1"), widget("w2"))

    result = run("delete", "widget", "w1")

    assert (result.code, result.out, result.err) == (0, f'{KEY} "w1" deleted\n', "")
    assert list(Widget.objects.values_list("name", flat=True)) == ["w2"]


def test_delete_several_and_type_slash_name(tmp_path):
    apply(tmp_path, widget("w1"), widget("w2"), widget("w3"), gadget("g"))

    assert run("delete", "wd", "w1", "w2").out == f'{KEY} "w1" deleted\n{KEY} "w2" deleted\n'
    assert (
        run("delete", "widgets/w3", "gadgets/g").out
        == f'{KEY} "w3" deleted\ngadgets.testing.kruntimes.io "g" deleted\n'
    )
    assert not Widget.objects.exists()
    assert not Gadget.objects.exists()


def test_delete_in_namespace(tmp_path):
    apply(
        tmp_path,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
        widget("w1", metadata={"namespace": "team"}),
        widget("w1"),
    )

    assert run("delete", "widgets", "w1", "-n", "team").code == 0
    assert list(Widget.objects.values_list("namespace", flat=True)) == ["default"]


def test_not_found_is_reported_and_the_rest_deleted(tmp_path):
    apply(tmp_path, widget("w1"))

    result = run("delete", "widgets", "nope", "w1")

    assert result.code == 1
    assert result.err == f'Error from server (NotFound): {KEY} "nope" not found\n'
    assert result.out == f'{KEY} "w1" deleted\n'
    assert not Widget.objects.exists()


def test_delete_from_file(tmp_path):
    path = apply(tmp_path, widget("w1"), widget("w2"), gadget("g"))
    Widget.objects.create(namespace="default", name="kept")

    result = run("delete", "-f", path)

    assert result.code == 0
    assert result.out.splitlines() == [
        f'{KEY} "w1" deleted',
        f'{KEY} "w2" deleted',
        'gadgets.testing.kruntimes.io "g" deleted',
    ]
    assert list(Widget.objects.values_list("name", flat=True)) == ["kept"]

    again = run("delete", "-f", path)
    assert again.code == 1
    assert again.err.splitlines()[0] == (
        f'Error from server (NotFound): error when deleting "{path}": {KEY} "w1" not found'
    )


def test_delete_from_stdin(tmp_path, monkeypatch):
    path = apply(tmp_path, widget("w1"))
    with open(path) as handle:
        monkeypatch.setattr(sys, "stdin", io.StringIO(handle.read()))

    assert run("delete", "-f", "-").out == f'{KEY} "w1" deleted\n'


def test_delete_from_file_removes_namespaces_last(tmp_path):
    path = apply(
        tmp_path,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
        widget("w1", metadata={"namespace": "team"}),
    )

    result = run("delete", "-f", path)

    assert result.code == 0, result.err
    assert result.out.splitlines() == [f'{KEY} "w1" deleted', 'namespaces "team" deleted']
    assert not Widget.objects.filter(namespace="team").exists()
    # the Namespace's spec finalizer keeps it, Terminating, until its content is collected
    assert Namespace.objects.get(name="team").deletion_timestamp is not None


def test_object_held_by_finalizer_stays_with_deletion_timestamp(tmp_path):
    apply(tmp_path, widget("held", metadata={"finalizers": ["example.com/keep"]}))
    before = Widget.objects.get(name="held")

    result = run("delete", "widgets", "held")

    assert (result.code, result.out, result.err) == (0, f'{KEY} "held" deleted\n', "")
    after = Widget.objects.get(pk=before.pk)
    assert after.deletion_timestamp is not None
    assert after.finalizers == ["example.com/keep"]
    assert after.resource_version == before.resource_version + 1
    assert run("delete", "widgets", "held").out == f'{KEY} "held" deleted\n'


def test_cascade_orphan_keeps_and_releases_dependents(tmp_path):
    apply(tmp_path, gadget("owner"), name="owner.yaml")
    owner = Gadget.objects.get(name="owner")
    ref = {
        "apiVersion": "testing.kruntimes.io/v1",
        "kind": "Gadget",
        "name": "owner",
        "uid": str(owner.uid),
    }
    apply(tmp_path, widget("dep", metadata={"ownerReferences": [ref]}), name="dep.yaml")

    result = run("delete", "gadgets", "owner", "--cascade=orphan")

    assert (result.code, result.out) == (0, 'gadgets.testing.kruntimes.io "owner" deleted\n')
    assert Widget.objects.get(name="dep").owner_references == []


def test_cascade_foreground_holds_owner_with_dependents(tmp_path):
    apply(tmp_path, gadget("owner"), name="owner.yaml")
    owner = Gadget.objects.get(name="owner")
    ref = {
        "apiVersion": "testing.kruntimes.io/v1",
        "kind": "Gadget",
        "name": "owner",
        "uid": str(owner.uid),
    }
    apply(tmp_path, widget("dep", metadata={"ownerReferences": [ref]}), name="dep.yaml")

    result = run("delete", "gadgets", "owner", "--cascade", "foreground")

    assert result.out == 'gadgets.testing.kruntimes.io "owner" deleted\n'
    held = Gadget.objects.get(name="owner")
    assert "foregroundDeletion" in held.finalizers
    assert held.deletion_timestamp is not None


def test_usage_errors(tmp_path):
    no_name = run("delete", "widgets")
    assert no_name.code == 1
    assert no_name.err.startswith("error: resource(s) were provided, but no name")

    nothing = run("delete")
    assert nothing.err == "error: You must provide one or more resources by argument or filename.\n"

    unknown = run("delete", "sprockets", "x")
    assert unknown.err == 'error: the server doesn\'t have a resource type "sprockets"\n'

    missing = run("delete", "-f", str(tmp_path / "nope.yaml"))
    assert missing.err == f'error: the path "{tmp_path / "nope.yaml"}" does not exist\n'
