"""The field-set algebra of managedFields (no database): paths, the fieldsV1 encoding, the
keyed/set/atomic list rules, and the merge and removal a server-side apply is built from."""

from __future__ import annotations

from portal.machinery import managed_fields as mf
from portal.machinery.server_side_apply import path_text


def test_maps_are_granular_and_lists_atomic_by_default():
    paths = mf.fields_of({"spec": {"a": 1, "b": {"c": [1, 2]}, "e": {}}})
    assert paths == {("f:spec", "f:a"), ("f:spec", "f:b", "f:c"), ("f:spec", "f:e")}


def test_keyed_lists_own_each_item_and_its_fields():
    doc = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    item = ("f:status", "f:conditions", 'k:{"type":"Ready"}')
    assert mf.fields_of(doc) == {item, (*item, "f:type"), (*item, "f:status")}


def test_a_list_without_unique_keys_stays_atomic():
    doc = {"spec": {"env": [{"name": "A"}, {"name": "A"}]}}
    assert mf.fields_of(doc) == {("f:spec", "f:env")}


def test_finalizers_are_a_set():
    paths = mf.fields_of({"metadata": {"finalizers": ["a", "b"]}})
    assert paths == {
        ("f:metadata", "f:finalizers", 'v:"a"'),
        ("f:metadata", "f:finalizers", 'v:"b"'),
    }


def test_identity_and_status_are_owned_by_no_main_resource_write():
    doc = {
        "apiVersion": "v1",
        "kind": "X",
        "metadata": {"name": "n", "uid": "u", "labels": {"a": "1"}},
        "spec": {"x": 1},
        "status": {"phase": "P"},
    }
    assert mf.owned_fields(doc, None, "status") == {
        ("f:metadata", "f:labels", "f:a"),
        ("f:spec", "f:x"),
    }
    assert mf.owned_fields(doc, "status", "status") == {("f:status", "f:phase")}


def test_fields_v1_round_trips_with_the_dot_marker():
    item = ("f:status", "f:conditions", 'k:{"type":"Ready"}')
    paths = {item, (*item, "f:status"), ("f:spec", "f:x")}
    encoded = mf.encode(paths)
    assert encoded["f:status"]["f:conditions"]['k:{"type":"Ready"}'] == {".": {}, "f:status": {}}
    assert mf.decode(encoded) == paths


def test_merge_keyed_lists_by_key_and_replace_atomic_ones():
    live = {"conditions": [{"type": "A", "status": "x"}], "args": [1, 2], "m": {"k": 1}}
    config = {"conditions": [{"type": "B", "status": "y"}], "args": [3], "m": {"j": 2}}
    merged = mf.merge(live, config)
    assert merged == {
        "conditions": [{"type": "A", "status": "x"}, {"type": "B", "status": "y"}],
        "args": [3],
        "m": {"k": 1, "j": 2},
    }


def test_remove_at_a_field_and_a_keyed_item():
    doc = {"spec": {"a": 1, "env": [{"name": "X"}, {"name": "Y"}]}}
    mf.remove_at(doc, ("f:spec", "f:a"))
    mf.remove_at(doc, ("f:spec", "f:env", 'k:{"name":"X"}'))
    assert doc == {"spec": {"env": [{"name": "Y"}]}}


def test_path_text_is_kubes():
    assert path_text(("f:spec", "f:x")) == ".spec.x"
    assert (
        path_text(("f:status", "f:conditions", 'k:{"type":"Ready"}', "f:status"))
        == '.status.conditions[type="Ready"].status'
    )


def test_manager_from_user_agent():
    assert mf.manager_from_user_agent("kubectl/v1.37.0 (linux/amd64) kubernetes/abc") == "kubectl"
    assert mf.manager_from_user_agent("") == ""


def _apply(live, config, entries, manager, force=False):
    from portal.machinery import server_side_apply

    return server_side_apply.apply(
        live,
        config,
        entries,
        manager=manager,
        force=force,
        api_version="v1",
        subresource=None,
        status_field="status",
        plural="things",
        group="",
        name="t",
    )


def test_two_appliers_own_their_own_items_of_a_keyed_list():
    a = {"spec": {"env": [{"name": "A", "value": "1"}]}}
    b = {"spec": {"env": [{"name": "B", "value": "2"}]}}
    first = _apply(None, a, [], "ma")
    second = _apply(first.manifest, b, first.managed, "mb")
    assert [e["name"] for e in second.manifest["spec"]["env"]] == ["A", "B"]
    # ma applies no item any more: its item goes, mb's stays
    third = _apply(second.manifest, {}, second.managed, "ma")
    assert third.manifest["spec"]["env"] == [{"name": "B", "value": "2"}]
    assert {e["manager"] for e in third.managed} == {"mb"}


def test_an_atomic_list_is_one_field_that_conflicts_as_a_whole():
    from portal.machinery.errors import StatusError

    first = _apply(None, {"spec": {"args": [1, 2]}}, [], "ma")
    try:
        _apply(first.manifest, {"spec": {"args": [1]}}, first.managed, "mb")
    except StatusError as exc:
        assert exc.code == 409
        assert (
            exc.message == 'Apply failed with 1 conflict: conflict with "ma" using v1: .spec.args'
        )
    else:
        raise AssertionError("no conflict")


def test_conflicts_with_several_fields_are_listed_as_kube_lists_them():
    from portal.machinery.errors import StatusError

    first = _apply(None, {"spec": {"a": 1, "b": 1}}, [], "ma")
    try:
        _apply(first.manifest, {"spec": {"a": 2, "b": 2}}, first.managed, "mb")
    except StatusError as exc:
        assert exc.message == (
            'Apply failed with 2 conflicts: conflicts with "ma" using v1:\n- .spec.a\n- .spec.b'
        )
        assert [c.field for c in exc.causes] == [".spec.a", ".spec.b"]
    else:
        raise AssertionError("no conflict")


def test_conflicts_with_several_managers_list_each_managers_paths():
    from portal.machinery.errors import StatusError

    first = _apply(None, {"spec": {"a": 1}}, [], "ma")
    second = _apply(first.manifest, {"spec": {"b": 1}}, first.managed, "mb")
    try:
        _apply(second.manifest, {"spec": {"a": 2, "b": 2}}, second.managed, "mc")
    except StatusError as exc:
        assert exc.message == (
            'Apply failed with 2 conflicts: conflicts with "ma" using v1:\n- .spec.a\n'
            'conflicts with "mb" using v1:\n- .spec.b'
        )
    else:
        raise AssertionError("no conflict")


def test_a_status_manager_is_named_with_its_subresource():
    from portal.machinery.server_side_apply import manager_text

    entry = {"manager": "ctl", "apiVersion": "v1", "subresource": "status"}
    assert manager_text(entry) == '"ctl" with subresource "status" using v1'


def test_an_item_another_manager_owns_a_field_of_stays():
    first = _apply(None, {"spec": {"env": [{"name": "A", "value": "1"}]}}, [], "ma")
    live = {"spec": {"env": [{"name": "A", "value": "1", "valueFrom": "x"}]}}
    child = ("f:spec", "f:env", 'k:{"name":"A"}', "f:valueFrom")
    update = {"manager": "mb", "operation": "Update", "fieldsV1": mf.encode({child})}
    third = _apply(live, {}, [*first.managed, update], "ma")
    assert third.manifest["spec"]["env"] == [{"name": "A", "valueFrom": "x"}]
