"""``manage.py get``: tables with AGE, namespaces, selectors, wide/yaml/json/name output."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from portal import cli
from portal.machinery import yaml
from tests.helpers.commands import apply, run, widget
from tests.testapp.models import Gadget, Widget

pytestmark = pytest.mark.django_db

KEY = "widgets.testing.kruntimes.io"


def namespace(name):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def backdate(model, name, **ago):
    model.objects.filter(name=name).update(creation_timestamp=timezone.now() - timedelta(**ago))


def test_table_columns_padding_and_age(tmp_path):
    apply(tmp_path, widget("a", 3), widget("a-much-longer-name", 10))
    Widget.objects.filter(name="a").update(status={"phase": "Ready"}, phase="Ready")
    backdate(Widget, "a", hours=5, seconds=5)
    backdate(Widget, "a-much-longer-name", minutes=3)

    result = run("get", "widgets")

    assert (result.code, result.err) == (0, "")
    assert result.out == (
        "NAME                 SIZE   PHASE    AGE\n"
        "a                    3      Ready    5h\n"
        "a-much-longer-name   10     <none>   3m\n"
    )


@pytest.mark.parametrize("name", ["widgets", "widget", "wd", "Widget", KEY, "WD"])
def test_kind_by_any_registered_name(tmp_path, name):
    apply(tmp_path, widget("w1"))

    assert run("get", name, "-o", "name").out == f"{KEY}/w1\n"


def test_unknown_kind(tmp_path):
    result = run("get", "sprockets")

    assert result.code == 1
    assert result.err == 'error: the server doesn\'t have a resource type "sprockets"\n'


def test_wide_adds_wide_columns_after_age(tmp_path):
    apply(tmp_path, widget("w1", 2, spec={"color": "blue"}))

    result = run("get", "wd", "-o", "wide")

    header, row = result.out.splitlines()
    assert header.split() == ["NAME", "SIZE", "PHASE", "AGE", "COLOR"]
    assert row.split()[:3] == ["w1", "2", "<none>"]
    assert row.split()[-1] == "blue"
    assert "COLOR" not in run("get", "wd").out


def test_all_namespaces_and_namespace_flag(tmp_path):
    apply(
        tmp_path, namespace("team-b"), widget("w1"), widget("w2", metadata={"namespace": "team-b"})
    )

    everywhere = run("get", "widgets", "-A")
    lines = everywhere.out.splitlines()
    assert lines[0].split() == ["NAMESPACE", "NAME", "SIZE", "PHASE", "AGE"]
    assert lines[0].startswith("NAMESPACE   NAME")
    assert [line.split()[:2] for line in lines[1:]] == [["default", "w1"], ["team-b", "w2"]]

    assert [line.split()[0] for line in run("get", "widgets").out.splitlines()[1:]] == ["w1"]
    assert [
        line.split()[0] for line in run("get", "widgets", "-n", "team-b").out.splitlines()[1:]
    ] == ["w2"]
    # a cluster-scoped kind has no NAMESPACE column even with -A
    assert run("get", "namespaces", "-A").out.splitlines()[0].split() == ["NAME", "STATUS", "AGE"]


def test_label_selector(tmp_path):
    apply(
        tmp_path,
        widget("front", metadata={"labels": {"tier": "web"}}),
        widget("back", metadata={"labels": {"tier": "db"}}),
        widget("bare"),
    )

    assert run("get", "widgets", "-l", "tier=web", "-o", "name").out == f"{KEY}/front\n"
    assert run("get", "widgets", "-l", "tier", "-o", "name").out.splitlines() == [
        f"{KEY}/back",
        f"{KEY}/front",
    ]
    assert run("get", "widgets", "-l", "tier!=web", "-o", "name").out.splitlines() == [
        f"{KEY}/back",
        f"{KEY}/bare",
    ]
    bad = run("get", "widgets", "-l", "a b c")
    assert bad.code == 1
    assert bad.err.startswith("Error from server (BadRequest): unable to parse labelSelector")


def test_yaml_single_object_round_trips_through_apply(tmp_path):
    apply(tmp_path, widget("w1", 4, metadata={"labels": {"a": "b"}}))
    Widget.objects.filter(name="w1").update(status={"phase": "Ready"})
    live = Widget.objects.get(name="w1")

    result = run("get", "widget", "w1", "-o", "yaml")

    manifest = yaml.load_one(result.out)
    assert manifest["kind"] == "Widget"
    assert manifest["metadata"]["name"] == "w1"
    assert manifest["metadata"]["resourceVersion"] == str(live.resource_version)
    assert manifest["spec"] == {"size": 4, "color": "red"}
    assert manifest["status"] == {"phase": "Ready"}
    (tmp_path / "back.yaml").write_text(result.out)
    again = run("apply", "-f", str(tmp_path / "back.yaml"))
    assert (again.code, again.out) == (0, f"{KEY}/w1 unchanged\n")
    assert Widget.objects.get(pk=live.pk).resource_version == live.resource_version


def test_yaml_list_round_trips_through_apply(tmp_path):
    apply(tmp_path, widget("w1"), widget("w2"))

    result = run("get", "widgets", "-o", "yaml")

    listing = yaml.load_one(result.out)
    assert (listing["apiVersion"], listing["kind"]) == ("v1", "List")
    assert [item["metadata"]["name"] for item in listing["items"]] == ["w1", "w2"]
    (tmp_path / "back.yaml").write_text(result.out)
    assert run("apply", "-f", str(tmp_path / "back.yaml")).out.splitlines() == [
        f"{KEY}/w1 unchanged",
        f"{KEY}/w2 unchanged",
    ]


def test_a_listing_is_a_list_even_with_one_item(tmp_path):
    apply(tmp_path, widget("w1"))

    assert yaml.load_one(run("get", "widgets", "-o", "yaml").out)["kind"] == "List"
    assert yaml.load_one(run("get", "widgets", "w1", "-o", "yaml").out)["kind"] == "Widget"


def test_json_output(tmp_path):
    apply(tmp_path, widget("w1"), widget("w2"))

    one = run("get", "widgets", "w1", "-o", "json")
    assert one.out.startswith('{\n    "apiVersion": "testing.kruntimes.io/v1",\n')
    assert json.loads(one.out)["metadata"]["name"] == "w1"
    several = json.loads(run("get", "widgets", "w1", "w2", "-o", "json").out)
    assert several["kind"] == "List"
    assert [item["metadata"]["name"] for item in several["items"]] == ["w1", "w2"]


def test_name_output_and_type_slash_name(tmp_path):
    apply(
        tmp_path,
        widget("w1"),
        widget("w2"),
        {
            "apiVersion": "testing.kruntimes.io/v1",
            "kind": "Gadget",
            "metadata": {"name": "g"},
            "spec": {"size": 1},
        },
    )

    assert run("get", "widgets", "-o", "name").out == f"{KEY}/w1\n{KEY}/w2\n"
    assert (
        run("get", "wd/w2", "gadgets/g", "-o", "name").out
        == f"{KEY}/w2\ngadgets.testing.kruntimes.io/g\n"
    )


def test_several_kinds_print_one_table_each_with_qualified_names(tmp_path):
    apply(
        tmp_path,
        widget("w1"),
        {
            "apiVersion": "testing.kruntimes.io/v1",
            "kind": "Gadget",
            "metadata": {"name": "g"},
            "spec": {"size": 1},
        },
    )

    tables = run("get", "widgets,gadgets").out.split("\n\n")

    assert len(tables) == 2
    assert tables[0].splitlines()[1].split()[0] == f"{KEY}/w1"
    assert tables[1].splitlines()[0].split() == ["NAME", "AGE"]
    assert tables[1].splitlines()[1].split()[0] == "gadgets.testing.kruntimes.io/g"


def test_not_found(tmp_path):
    apply(tmp_path, widget("w1"))

    missing = run("get", "widgets", "x")
    assert (missing.code, missing.out) == (1, "")
    assert missing.err == f'Error from server (NotFound): {KEY} "x" not found\n'

    partly = run("get", "widgets", "w1", "x")
    assert partly.code == 1
    assert partly.out.splitlines()[1].split()[0] == "w1"
    assert partly.err == f'Error from server (NotFound): {KEY} "x" not found\n'


def test_no_resources(tmp_path):
    empty = run("get", "widgets")
    assert (empty.code, empty.out, empty.err) == (
        0,
        "",
        "No resources found in default namespace.\n",
    )
    assert run("get", "widgets", "-n", "x").err == "No resources found in x namespace.\n"
    assert run("get", "widgets", "-A").err == "No resources found\n"
    assert run("get", "gadgets").err == "No resources found\n"
    assert yaml.load_one(run("get", "widgets", "-o", "yaml").out)["items"] == []


def test_selector_with_names_is_refused():
    result = run("get", "widgets", "w1", "-l", "a=b")

    assert result.code == 1
    assert result.err == "error: name cannot be provided when a selector is specified\n"


def test_name_across_all_namespaces_is_refused():
    result = run("get", "widgets", "w1", "-A")

    assert (result.code, result.out) == (1, "")
    assert result.err == "error: a resource cannot be retrieved by name across all namespaces\n"


def test_gadget_age_in_days(tmp_path):
    apply(
        tmp_path,
        {
            "apiVersion": "testing.kruntimes.io/v1",
            "kind": "Gadget",
            "metadata": {"name": "g"},
            "spec": {"size": 1},
        },
    )
    backdate(Gadget, "g", days=4, hours=1)

    assert run("get", "gadgets").out.splitlines()[1].split() == ["g", "4d1h"]


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (5, "5s"),
        (119, "119s"),
        (120, "2m"),
        (185, "3m5s"),
        (600, "10m"),
        (179 * 60 + 59, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 25 * 60, "3h25m"),
        (8 * 3600, "8h"),
        (47 * 3600 + 3599, "47h"),
        (48 * 3600, "2d"),
        (4 * 86400 + 3 * 3600, "4d3h"),
        (8 * 86400, "8d"),
        (400 * 86400, "400d"),
        (730 * 86400, "2y"),
        (800 * 86400, "2y70d"),
        (3000 * 86400, "8y"),
    ],
)
def test_human_duration_matches_kubectl(seconds, expected):
    assert cli.human_duration(timedelta(seconds=seconds)) == expected


def test_format_table_min_width():
    assert cli.format_table([["A", "B"], ["x", "yy"]]) == "A     B\nx     yy"
