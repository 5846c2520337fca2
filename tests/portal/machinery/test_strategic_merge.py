"""Each rule and directive of Kubernetes' strategic merge patch (apimachinery ``strategicpatch``),
on plain documents: a test fails if its rule is removed."""

from __future__ import annotations

import pytest

from portal.machinery import errors
from portal.machinery.strategic_merge import Field, apply, with_object_meta

OWNED = Field(merge=True, merge_key="uid", fields={"labels": Field()})
SCHEMA = with_object_meta(
    {
        "spec": Field(
            fields={
                "items": Field(merge=True, merge_key="name"),
                "tags": Field(merge=True),
                "plain": Field(),
            }
        )
    }
)


def test_maps_merge_recursively_and_null_deletes():
    original = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"x": 1, "y": 2}}
    patched = apply(original, {"metadata": {"labels": {"b": None, "c": "3"}}, "spec": {"x": 5}}, {})
    assert patched == {"metadata": {"labels": {"a": "1", "c": "3"}}, "spec": {"x": 5, "y": 2}}
    assert original["spec"] == {"x": 1, "y": 2}  # the original is not changed


def test_a_list_without_patch_strategy_is_replaced():
    original = {"spec": {"plain": [1, 2], "items": []}}
    assert apply(original, {"spec": {"plain": [3]}}, SCHEMA)["spec"]["plain"] == [3]
    # a field the schema does not name (RBAC rules, subjects) is replaced too
    assert apply({"rules": [{"a": 1}, {"b": 2}]}, {"rules": [{"c": 3}]}, {}) == {
        "rules": [{"c": 3}]
    }


def test_a_keyed_list_merges_by_its_merge_key():
    original = {"spec": {"items": [{"name": "a", "v": 1, "w": 1}, {"name": "b", "v": 1}]}}
    patched = apply(original, {"spec": {"items": [{"name": "a", "v": 2}, {"name": "c"}]}}, SCHEMA)
    assert patched["spec"]["items"] == [
        {"name": "a", "v": 2, "w": 1},
        {"name": "b", "v": 1},
        {"name": "c"},
    ]


def test_a_keyed_element_with_patch_delete_is_removed():
    original = {"spec": {"items": [{"name": "a"}, {"name": "b"}]}}
    patch = {"spec": {"items": [{"name": "a", "$patch": "delete"}]}}
    assert apply(original, patch, SCHEMA)["spec"]["items"] == [{"name": "b"}]


def test_a_keyed_element_without_its_merge_key_is_a_400():
    with pytest.raises(errors.StatusError) as caught:
        apply({"spec": {"items": []}}, {"spec": {"items": [{"v": 1}]}}, SCHEMA)
    assert caught.value.code == 400
    assert caught.value.causes[0].field == "spec.items[0]"


def test_a_primitive_list_with_merge_strategy_is_a_union():
    original = {"spec": {"tags": ["a", "b"]}}
    assert apply(original, {"spec": {"tags": ["b", "c"]}}, SCHEMA)["spec"]["tags"] == [
        "a",
        "b",
        "c",
    ]


def test_delete_from_primitive_list():
    original = {"spec": {"tags": ["a", "b", "c"]}}
    patch = {"spec": {"$deleteFromPrimitiveList/tags": ["a", "c"]}}
    assert apply(original, patch, SCHEMA)["spec"] == {"tags": ["b"]}


def test_set_element_order_orders_a_merged_list():
    original = {"spec": {"items": [{"name": "a"}, {"name": "b"}], "tags": ["x", "y"]}}
    patch = {
        "spec": {
            "$setElementOrder/items": [{"name": "c"}, {"name": "b"}, {"name": "a"}],
            "items": [{"name": "c"}],
            "$setElementOrder/tags": ["y", "x"],
        }
    }
    patched = apply(original, patch, SCHEMA)["spec"]
    assert patched == {"items": [{"name": "c"}, {"name": "b"}, {"name": "a"}], "tags": ["y", "x"]}


def test_patch_replace_on_a_map_takes_the_patch_whole():
    original = {"spec": {"x": 1, "y": 2}}
    patched = apply(original, {"spec": {"$patch": "replace", "z": 3}}, SCHEMA)
    assert patched == {"spec": {"z": 3}}


def test_patch_replace_in_a_merging_list_replaces_it():
    original = {"spec": {"items": [{"name": "a"}, {"name": "b"}]}}
    patch = {"spec": {"items": [{"name": "c"}, {"$patch": "replace"}]}}
    assert apply(original, patch, SCHEMA)["spec"]["items"] == [{"name": "c"}]


def test_patch_delete_on_a_map_removes_it():
    original = {"spec": {"x": 1}, "other": 1}
    assert apply(original, {"spec": {"$patch": "delete"}}, SCHEMA) == {"other": 1}


def test_patch_merge_is_the_default():
    original = {"spec": {"x": 1}}
    assert apply(original, {"spec": {"$patch": "merge", "y": 2}}, SCHEMA) == {
        "spec": {"x": 1, "y": 2}
    }


def test_retain_keys_drops_the_fields_it_does_not_name():
    original = {"spec": {"x": 1, "y": 2, "z": 3}}
    patch = {"spec": {"$retainKeys": ["x", "w"], "w": 4}}
    assert apply(original, patch, SCHEMA) == {"spec": {"x": 1, "w": 4}}


def test_retain_keys_must_name_what_the_patch_sets():
    with pytest.raises(errors.StatusError) as caught:
        apply({"spec": {}}, {"spec": {"$retainKeys": ["x"], "w": 4}}, SCHEMA)
    assert caught.value.code == 400
    assert caught.value.causes[0].field == "spec.$retainKeys"


def test_an_unknown_directive_is_a_400_naming_it():
    with pytest.raises(errors.StatusError) as caught:
        apply({"spec": {}}, {"spec": {"$patch": "explode"}}, SCHEMA)
    assert caught.value.code == 400
    assert caught.value.causes[0].field == "spec.$patch"


def test_directives_are_never_stored_in_a_new_field():
    patched = apply({}, {"spec": {"items": [{"name": "a", "$patch": "merge"}]}}, SCHEMA)
    assert patched == {"spec": {"items": [{"name": "a"}]}}


def test_object_meta_owner_references_merge_by_uid():
    original = {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]}}
    patch = {"metadata": {"ownerReferences": [{"uid": "2", "name": "b"}]}}
    assert [o["uid"] for o in apply(original, patch, SCHEMA)["metadata"]["ownerReferences"]] == [
        "1",
        "2",
    ]


def test_object_meta_finalizers_merge_as_a_set():
    original = {"metadata": {"finalizers": ["a/x"]}}
    patch = {"metadata": {"finalizers": ["b/y", "a/x"]}}
    assert apply(original, patch, SCHEMA)["metadata"]["finalizers"] == ["a/x", "b/y"]


def test_a_patch_that_is_not_an_object_is_a_400():
    with pytest.raises(errors.StatusError) as caught:
        apply({}, [1], SCHEMA)
    assert caught.value.code == 400
