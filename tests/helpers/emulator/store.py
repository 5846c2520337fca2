"""The object store: metadata, one global resourceVersion, bounded history, watch fan-out.

Everything here is synchronous under one re-entrant lock, so the HTTP handlers (on the
emulator's event loop) and the test hooks (on the test's thread) share it safely; a watch
gets its events through ``loop.call_soon_threadsafe``.

Semantics, as kube-apiserver with etcd: one counter stamps every write's
``metadata.resourceVersion``; create fills uid, creationTimestamp, generation 1 and the
namespace from the URL (the namespace must exist) and answers 409 AlreadyExists for a
taken name; an update with a stale ``metadata.resourceVersion`` is 409 Conflict; a write
that changes nothing keeps its version and sends no event; a change outside metadata and
status bumps generation; main-resource writes keep the stored status of resources with a
status subresource and ``/status`` writes change only status; delete removes the object
(or, with finalizers, sets deletionTimestamp until the last finalizer goes) and deletes
its dependents by ownerReferences unless propagationPolicy is Orphan (the default for
batch/v1 Jobs, as the API server keeps for them). History keeps the last
``history_limit`` events; ``compact()`` forgets all of it, so a watch from an older
version gets 410 Expired.
"""

from __future__ import annotations

import asyncio
import collections
import copy
import datetime
import random
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from . import errors

Key = tuple[str, str, str, str]  # group, plural, namespace ("" if cluster-scoped), name
Predicate = Callable[[dict], bool]

# (group, plural) -> (kind, apiVersion); lists are "<kind>List"
KINDS: dict[tuple[str, str], tuple[str, str]] = {
    ("", "pods"): ("Pod", "v1"),
    ("", "namespaces"): ("Namespace", "v1"),
    ("", "serviceaccounts"): ("ServiceAccount", "v1"),
    ("", "secrets"): ("Secret", "v1"),
    ("", "configmaps"): ("ConfigMap", "v1"),
    ("", "services"): ("Service", "v1"),
    ("", "events"): ("Event", "v1"),
    ("", "persistentvolumeclaims"): ("PersistentVolumeClaim", "v1"),
    ("", "nodes"): ("Node", "v1"),
    ("apps", "deployments"): ("Deployment", "apps/v1"),
    ("apps", "replicasets"): ("ReplicaSet", "apps/v1"),
    ("apps", "statefulsets"): ("StatefulSet", "apps/v1"),
    ("batch", "jobs"): ("Job", "batch/v1"),
    ("node.k8s.io", "runtimeclasses"): ("RuntimeClass", "node.k8s.io/v1"),
    ("rbac.authorization.k8s.io", "roles"): ("Role", "rbac.authorization.k8s.io/v1"),
    ("rbac.authorization.k8s.io", "rolebindings"): ("RoleBinding", "rbac.authorization.k8s.io/v1"),
    ("coordination.k8s.io", "leases"): ("Lease", "coordination.k8s.io/v1"),
}
# Resources whose status is a subresource: main writes keep it, /status writes change only it.
STATUS_SUBRESOURCE = frozenset(
    {
        ("", "pods"),
        ("", "namespaces"),
        ("", "services"),
        ("", "persistentvolumeclaims"),
        ("", "nodes"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("batch", "jobs"),
    }
)
# Deleting these without a propagationPolicy orphans their dependents (the API's default).
ORPHAN_BY_DEFAULT = frozenset({("batch", "jobs")})
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # as the API server's generateName


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def random_suffix(length: int = 5) -> str:
    return "".join(random.choice(NAME_SUFFIX_ALPHABET) for _ in range(length))


def kind_of(group: str, plural: str) -> tuple[str, str]:
    if (group, plural) in KINDS:
        return KINDS[(group, plural)]
    return plural[:-1].capitalize() if plural.endswith("s") else plural.capitalize(), group


def _spec_part(obj: dict) -> dict:
    return {key: value for key, value in obj.items() if key not in ("metadata", "status")}


@dataclass
class Event:
    rv: int
    type: str  # ADDED / MODIFIED / DELETED
    group: str
    plural: str
    obj: dict
    old: dict | None = None  # the state before a MODIFIED, for selector transitions


@dataclass(eq=False)
class Watcher:
    """One open watch: what it matches, and the queue its loop reads events from."""

    group: str
    plural: str
    namespace: str | None
    matches: Predicate
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)

    def translate(self, event: Event) -> dict | None:
        """The event this watch sees: a selector transition becomes ADDED or DELETED."""
        if (event.group, event.plural) != (self.group, self.plural):
            return None
        namespace = event.obj.get("metadata", {}).get("namespace")
        if self.namespace is not None and namespace != self.namespace:
            return None
        new_match = self.matches(event.obj)
        if event.type != "MODIFIED":
            return {"type": event.type, "object": event.obj} if new_match else None
        old_match = event.old is not None and self.matches(event.old)
        if new_match and old_match:
            return {"type": "MODIFIED", "object": event.obj}
        if new_match:
            return {"type": "ADDED", "object": event.obj}
        if old_match:
            return {"type": "DELETED", "object": event.obj}
        return None

    def offer(self, event: Event) -> None:
        seen = self.translate(event)
        if seen is not None:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, seen)

    def end(self) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, None)


class Store:
    def __init__(self, history_limit: int = 1000) -> None:
        self.lock = threading.RLock()
        self.objects: dict[Key, dict] = {}
        self.rv = 0
        self.history: collections.deque[Event] = collections.deque()
        self.history_limit = history_limit
        self.floor = 0  # a watch may resume from this version or later
        self.watchers: set[Watcher] = set()
        # called with each event, under the lock, after watchers (the workload controllers)
        self.listeners: list[Callable[[Event], None]] = []
        # (group, plural) -> what the API server's admission fills in on create
        self.defaulters: dict[tuple[str, str], Callable[[dict], None]] = {}
        # a listener's exception, kept for the test to see (the write that caused it stands)
        self.errors: list[BaseException] = []
        self._pending: collections.deque[Event] = collections.deque()
        self._dispatching = False
        for name in INITIAL_NAMESPACES:
            self.create("", "namespaces", None, {"metadata": {"name": name}})

    # -- reading ---------------------------------------------------------------------------

    def get(self, group: str, plural: str, namespace: str | None, name: str) -> dict:
        with self.lock:
            obj = self.objects.get((group, plural, namespace or "", name))
            if obj is None:
                raise errors.not_found(group, plural, name)
            return copy.deepcopy(obj)

    def find(self, group: str, plural: str, namespace: str | None, name: str) -> dict | None:
        with self.lock:
            obj = self.objects.get((group, plural, namespace or "", name))
            return copy.deepcopy(obj) if obj is not None else None

    def select(
        self, group: str, plural: str, namespace: str | None, matches: Predicate | None = None
    ) -> list[dict]:
        with self.lock:
            return [
                copy.deepcopy(obj)
                for (g, p, ns, _), obj in sorted(self.objects.items())
                if (g, p) == (group, plural)
                and (namespace is None or ns == namespace)
                and (matches is None or matches(obj))
            ]

    def list(self, group: str, plural: str, namespace: str | None, matches: Predicate) -> dict:
        with self.lock:
            kind, api_version = kind_of(group, plural)
            return {
                "kind": f"{kind}List",
                "apiVersion": api_version,
                "metadata": {"resourceVersion": str(self.rv)},
                "items": self.select(group, plural, namespace, matches),
            }

    # -- watching --------------------------------------------------------------------------

    def watch(self, watcher: Watcher, since: int | None) -> list[dict]:
        """Register the watch; return what it sees first: the current objects as ADDED
        (``since`` None), or the retained events after ``since`` (410 if compacted away)."""
        with self.lock:
            if since is None:
                initial = [
                    {"type": "ADDED", "object": obj}
                    for obj in self.select(
                        watcher.group, watcher.plural, watcher.namespace, watcher.matches
                    )
                ]
            else:
                if since < self.floor:
                    raise errors.expired(since, self.floor)
                initial = [
                    seen
                    for event in self.history
                    if event.rv > since
                    for seen in [watcher.translate(event)]
                    if seen is not None
                ]
            self.watchers.add(watcher)
            return initial

    def unwatch(self, watcher: Watcher) -> None:
        with self.lock:
            self.watchers.discard(watcher)

    def end_watches(self) -> None:
        """Close every open watch (as an API server restart or a load balancer would)."""
        with self.lock:
            for watcher in list(self.watchers):
                watcher.end()

    def compact(self) -> int:
        """Forget the history (as etcd compaction): a watch from an older version gets 410."""
        with self.lock:
            self.history.clear()
            self.floor = self.rv
            return self.rv

    # -- writing ---------------------------------------------------------------------------

    def _publish(
        self, event_type: str, group: str, plural: str, obj: dict, old: dict | None = None
    ) -> None:
        event = Event(self.rv, event_type, group, plural, copy.deepcopy(obj), old)
        self.history.append(event)
        while len(self.history) > self.history_limit:
            self.floor = self.history.popleft().rv
        for watcher in list(self.watchers):
            watcher.offer(event)
        self._pending.append(event)
        if self._dispatching:
            return  # the outer dispatch drains it: controllers never recurse
        self._dispatching = True
        try:
            while self._pending:
                pending = self._pending.popleft()
                for listener in list(self.listeners):
                    try:
                        listener(pending)
                    except Exception as exc:  # noqa: BLE001 - kept for the test, see errors
                        self.errors.append(exc)
        finally:
            self._dispatching = False

    def _stamp(self, obj: dict) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)

    def create(self, group: str, plural: str, namespace: str | None, body: dict) -> dict:
        with self.lock:
            obj = copy.deepcopy(body)
            meta = obj.setdefault("metadata", {})
            if meta is None:
                meta = obj["metadata"] = {}
            if namespace is not None:
                if meta.get("namespace") not in (None, "", namespace):
                    raise errors.bad_request(
                        "the namespace of the provided object does not match the namespace "
                        "sent on the request",
                        field="metadata.namespace",
                    )
                namespace_obj = self.objects.get(("", "namespaces", "", namespace))
                if namespace_obj is None:
                    raise errors.not_found("", "namespaces", namespace)
                if namespace_obj["metadata"].get("deletionTimestamp"):
                    raise errors.StatusError(
                        403,
                        "Forbidden",
                        f'{plural} "{meta.get("name", "")}" is forbidden: unable to create new '
                        f"content in namespace {namespace} because it is being terminated",
                    )
                meta["namespace"] = namespace
            else:
                meta.pop("namespace", None)
            if not meta.get("name"):
                if not meta.get("generateName"):
                    raise errors.invalid(
                        group, plural, "", "metadata.name", "name or generateName is required"
                    )
                meta["name"] = meta["generateName"] + random_suffix()
            key = (group, plural, namespace or "", meta["name"])
            if key in self.objects:
                raise errors.already_exists(group, plural, meta["name"])
            kind, api_version = kind_of(group, plural)
            obj.setdefault("kind", kind)
            obj.setdefault("apiVersion", api_version)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now()
            meta["generation"] = 1
            if (group, plural) in self.defaulters:
                self.defaulters[(group, plural)](obj)
            for transient in ("deletionTimestamp", "deletionGracePeriodSeconds"):
                meta.pop(transient, None)
            if (group, plural) in STATUS_SUBRESOURCE:
                obj["status"] = {"phase": "Pending"} if plural == "pods" else {}
                if plural == "namespaces":
                    obj["status"] = {"phase": "Active"}
            self._stamp(obj)
            self.objects[key] = obj
            self._publish("ADDED", group, plural, obj)
            return copy.deepcopy(obj)

    def replace(
        self,
        group: str,
        plural: str,
        namespace: str | None,
        name: str,
        body: dict,
        *,
        subresource: str | None = None,
    ) -> dict:
        """PUT: the body replaces the stored object (its rv, if any, must be current)."""
        with self.lock:
            key = (group, plural, namespace or "", name)
            current = self.objects.get(key)
            if current is None:
                raise errors.not_found(group, plural, name)
            meta = (body.get("metadata") or {}) if isinstance(body, dict) else {}
            if meta.get("name") not in (None, name):
                raise errors.bad_request(
                    "the name of the object does not match the name on the URL",
                    field="metadata.name",
                )
            requested_rv = meta.get("resourceVersion")
            if (
                requested_rv not in (None, "")
                and str(requested_rv) != current["metadata"]["resourceVersion"]
            ):
                raise errors.conflict(group, plural, name)
            if requested_rv not in (None, "") and meta.get("uid") not in (
                None,
                current["metadata"]["uid"],
            ):
                raise errors.conflict(
                    group,
                    plural,
                    name,
                    f"Precondition failed: UID in precondition: {meta.get('uid')}, "
                    f"UID in object meta: {current['metadata']['uid']}",
                )
            return self._write(key, current, copy.deepcopy(body), subresource)

    def patch(
        self,
        group: str,
        plural: str,
        namespace: str | None,
        name: str,
        apply: Callable[[dict], dict],
        *,
        subresource: str | None = None,
    ) -> dict:
        """PATCH: ``apply`` makes the new object from the current; a resourceVersion the
        patch sets must be the current one."""
        with self.lock:
            key = (group, plural, namespace or "", name)
            current = self.objects.get(key)
            if current is None:
                raise errors.not_found(group, plural, name)
            patched = apply(copy.deepcopy(current))
            if not isinstance(patched, dict):
                raise errors.bad_request("the patch does not make an object", field="patch")
            patched_meta = patched.get("metadata") or {}
            if str(patched_meta.get("resourceVersion")) != current["metadata"]["resourceVersion"]:
                raise errors.conflict(group, plural, name)
            return self._write(key, current, patched, subresource)

    def mutate(
        self,
        group: str,
        plural: str,
        namespace: str | None,
        name: str,
        change: Callable[[dict], None],
    ) -> dict | None:
        """A controller's or kubelet's write: ``change`` edits a copy in place (spec and
        status alike); None if the object is gone. A change that changes nothing is no write."""
        with self.lock:
            key = (group, plural, namespace or "", name)
            current = self.objects.get(key)
            if current is None:
                return None
            obj = copy.deepcopy(current)
            change(obj)
            if obj == current:
                return copy.deepcopy(current)
            self._stamp(obj)
            self.objects[key] = obj
            self._publish("MODIFIED", group, plural, obj, copy.deepcopy(current))
            return copy.deepcopy(obj)

    def _write(self, key: Key, current: dict, new: dict, subresource: str | None) -> dict:
        group, plural, _, name = key
        if subresource == "status":
            obj = copy.deepcopy(current)
            obj["status"] = new.get("status") or {}
        else:
            obj = new
            obj.setdefault("kind", current.get("kind"))
            obj.setdefault("apiVersion", current.get("apiVersion"))
            meta = obj.setdefault("metadata", {})
            for kept in (
                "name",
                "namespace",
                "uid",
                "creationTimestamp",
                "generation",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
            ):
                if kept in current["metadata"]:
                    meta[kept] = current["metadata"][kept]
                else:
                    meta.pop(kept, None)
            if (group, plural) in STATUS_SUBRESOURCE:
                obj["status"] = copy.deepcopy(current.get("status", {}))
            if current["metadata"].get("deletionTimestamp"):
                # finalizers may only be removed once deletion started (new ones are refused)
                before = set(current["metadata"].get("finalizers") or [])
                if set(meta.get("finalizers") or []) - before:
                    raise errors.StatusError(
                        422,
                        "Invalid",
                        f'{plural} "{name}" is invalid: metadata.finalizers: Forbidden: '
                        "no new finalizers can be added if the object is being deleted",
                    )
            if _spec_part(obj) != _spec_part(current):
                meta["generation"] = int(current["metadata"].get("generation", 1)) + 1
        obj["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        if obj == current:
            return copy.deepcopy(current)  # a no-op write keeps its version, sends no event
        self._stamp(obj)
        self.objects[key] = obj
        self._publish("MODIFIED", group, plural, obj, copy.deepcopy(current))
        if obj["metadata"].get("deletionTimestamp") and not obj["metadata"].get("finalizers"):
            self._remove(key)
        return copy.deepcopy(obj)

    def delete(
        self,
        group: str,
        plural: str,
        namespace: str | None,
        name: str,
        *,
        propagation: str | None = None,
        preconditions: dict | None = None,
    ) -> dict:
        with self.lock:
            key = (group, plural, namespace or "", name)
            current = self.objects.get(key)
            if current is None:
                raise errors.not_found(group, plural, name)
            preconditions = preconditions or {}
            if preconditions.get("uid") not in (None, current["metadata"]["uid"]):
                raise errors.conflict(
                    group,
                    plural,
                    name,
                    f"Precondition failed: UID in precondition: {preconditions['uid']}, "
                    f"UID in object meta: {current['metadata']['uid']}",
                )
            if preconditions.get("resourceVersion") not in (
                None,
                current["metadata"]["resourceVersion"],
            ):
                raise errors.conflict(group, plural, name)
            if propagation is None:
                propagation = "Orphan" if (group, plural) in ORPHAN_BY_DEFAULT else "Background"
            if propagation not in ("Orphan", "Background", "Foreground"):
                raise errors.bad_request(
                    f'propagationPolicy: Unsupported value: "{propagation}"',
                    field="propagationPolicy",
                )
            if plural == "namespaces" and group == "":
                for other in [
                    k for k in self.objects if k[2] == name and k[0:2] != ("", "namespaces")
                ]:
                    if other in self.objects:
                        self._remove(other)
            if current["metadata"].get("finalizers"):
                if current["metadata"].get("deletionTimestamp"):
                    return copy.deepcopy(current)
                obj = copy.deepcopy(current)
                obj["metadata"]["deletionTimestamp"] = now()
                obj["metadata"]["deletionGracePeriodSeconds"] = 0
                self._stamp(obj)
                self.objects[key] = obj
                self._publish("MODIFIED", group, plural, obj, copy.deepcopy(current))
                return copy.deepcopy(obj)
            return self._remove(key, propagation)

    def _remove(self, key: Key, propagation: str = "Background") -> dict:
        """Remove the object, then (as the garbage collector) orphan or delete its dependents."""
        obj = self.objects.pop(key)
        self._stamp(obj)
        self._publish("DELETED", key[0], key[1], obj)
        uid = obj["metadata"]["uid"]
        if propagation == "Orphan":
            self._orphan(uid)
        else:
            for dependent in self._dependents(uid):
                if dependent in self.objects:
                    self._remove(dependent)
        return copy.deepcopy(obj)

    def _dependents(self, uid: str) -> Iterable[Key]:
        return [
            key
            for key, obj in self.objects.items()
            if any(ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences") or [])
        ]

    def _orphan(self, uid: str) -> None:
        for key in self._dependents(uid):
            current = self.objects[key]
            obj = copy.deepcopy(current)
            refs = [ref for ref in obj["metadata"]["ownerReferences"] if ref.get("uid") != uid]
            if refs:
                obj["metadata"]["ownerReferences"] = refs
            else:
                del obj["metadata"]["ownerReferences"]
            self._stamp(obj)
            self.objects[key] = obj
            self._publish("MODIFIED", key[0], key[1], obj, copy.deepcopy(current))
