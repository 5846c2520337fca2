"""Watches: initial state, resume from a version, 410 after compaction, timeouts, selectors."""

from __future__ import annotations

import threading
import time

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException


def names(events):
    return [(event["type"], event["object"].metadata.name) for event in events]


def test_a_watch_without_a_version_starts_with_the_current_objects_and_ends_on_timeout(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    started = time.monotonic()
    events = list(
        kubernetes.watch.Watch().stream(
            core.list_namespaced_config_map, "default", timeout_seconds=1
        )
    )
    assert names(events) == [("ADDED", "a")]
    assert 0.9 < time.monotonic() - started < 5


def test_live_events_carry_increasing_versions(core):
    seen: list = []
    watch = kubernetes.watch.Watch()

    def consume():
        for event in watch.stream(core.list_namespaced_config_map, "default", timeout_seconds=5):
            seen.append(event)
            if event["type"] == "DELETED":
                watch.stop()

    thread = threading.Thread(target=consume)
    thread.start()
    time.sleep(0.3)
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "v"}})
    core.delete_namespaced_config_map("a", "default")
    thread.join(10)
    assert names(seen) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    versions = [int(event["object"].metadata.resource_version) for event in seen]
    assert versions == sorted(versions) and len(set(versions)) == 3


def test_a_watch_resumes_after_a_version_with_only_the_later_events(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    listed = core.list_namespaced_config_map("default")
    core.create_namespaced_config_map("default", {"metadata": {"name": "b"}})
    core.delete_namespaced_config_map("a", "default")
    events = list(
        kubernetes.watch.Watch().stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=listed.metadata.resource_version,
            timeout_seconds=1,
        )
    )
    assert names(events) == [("ADDED", "b"), ("DELETED", "a")]


def test_a_watch_from_a_compacted_version_is_410_gone(core, kube):
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    old = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "b"}})
    kube.compact()
    with pytest.raises(ApiException) as caught:
        list(
            kubernetes.watch.Watch().stream(
                core.list_namespaced_config_map, "default", resource_version=old, timeout_seconds=1
            )
        )
    assert caught.value.status == 410
    # the current version still resumes; the raw event is the API server's ERROR Status
    current = core.list_namespaced_config_map("default").metadata.resource_version
    resumed = kubernetes.watch.Watch().stream(
        core.list_namespaced_config_map, "default", resource_version=current, timeout_seconds=1
    )
    assert list(resumed) == []
    raw = core.list_namespaced_config_map(
        "default", watch=True, resource_version=old, _preload_content=False
    )
    import json

    event = json.loads(raw.data.decode().splitlines()[0])
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"


def test_history_beyond_its_limit_is_410(core, kube):
    kube.store.history_limit = 2
    first = core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    for name in ("b", "c", "d"):
        core.create_namespaced_config_map("default", {"metadata": {"name": name}})
    with pytest.raises(ApiException) as caught:
        list(
            kubernetes.watch.Watch().stream(
                core.list_namespaced_config_map,
                "default",
                resource_version=first.metadata.resource_version,
                timeout_seconds=1,
            )
        )
    assert caught.value.status == 410


def test_a_label_selector_watch_sees_objects_enter_and_leave_it(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    since = core.list_namespaced_config_map("default").metadata.resource_version
    core.patch_namespaced_config_map("a", "default", {"metadata": {"labels": {"app": "web"}}})
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "v"}})
    core.patch_namespaced_config_map("a", "default", {"metadata": {"labels": {"app": "db"}}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "other"}})
    events = list(
        kubernetes.watch.Watch().stream(
            core.list_namespaced_config_map,
            "default",
            label_selector="app=web",
            resource_version=since,
            timeout_seconds=1,
        )
    )
    assert names(events) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


def test_a_field_selector_watch_of_one_name_and_namespace(core):
    core.create_namespace({"metadata": {"name": "other"}})
    since = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "b"}})
    core.create_namespaced_config_map("other", {"metadata": {"name": "a"}})
    events = list(
        kubernetes.watch.Watch().stream(
            core.list_config_map_for_all_namespaces,
            field_selector="metadata.name=a,metadata.namespace=default",
            resource_version=since,
            timeout_seconds=1,
        )
    )
    assert [(e["object"].metadata.namespace, e["object"].metadata.name) for e in events] == [
        ("default", "a")
    ]


def test_end_watches_closes_open_streams(core, kube):
    done = threading.Event()

    def consume():
        list(
            kubernetes.watch.Watch().stream(
                core.list_namespaced_config_map, "default", timeout_seconds=30, _request_timeout=60
            )
        )
        done.set()

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    time.sleep(0.3)
    kube.end_watches()
    assert done.wait(5)
