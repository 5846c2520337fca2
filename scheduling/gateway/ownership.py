"""Which runtimed serves a function Run, known in memory: (namespace, name) -> the Run's uid,
phase, attempt and assigned pod, and each pod's dataplane address.

The watch hub of the process (``portal.machinery.watch``) hands every Run change to this
cache (one listener per process, subscribed at the first invocation); a Run the cache has not
seen is read once from the database and kept. So an invocation reads no database in the
steady state, and a Run that leaves ``Ready`` is answered as such within one hub poll. Every
entry carries the resourceVersion it was read at: an older read never replaces a newer change,
and a deletion leaves a short tombstone so a read racing it cannot bring the Run back.
A pod's address is read with its Run and kept until the pod is deleted or stops answering.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.db import connection

from portal.machinery import history, watch
from portal.machinery.registry import registry
from scheduling.models import TERMINAL_PHASES, Run, RuntimePod

ABSENT_SECONDS = 30.0  # how long "no such Run" is remembered (a create's change ends it sooner)
ABSENT_ENTRIES = 4096


@dataclass(frozen=True, slots=True)
class Owner:
    """What the gateway needs of a Run to route an invocation to it."""

    uid: str
    version: int
    phase: str
    attempt: int
    pod: str  # the assigned pod's name ("" when unbound)
    pod_uid: str
    function: bool  # spec.mode.function is set
    terminating: bool  # metadata.deletionTimestamp is set


def owner_of(manifest: dict[str, Any], version: int) -> Owner:
    metadata = manifest.get("metadata") or {}
    spec = manifest.get("spec") or {}
    status = manifest.get("status") or {}
    return Owner(
        uid=str(metadata.get("uid") or ""),
        version=version,
        phase=str(status.get("phase") or "Pending"),
        attempt=int(status.get("attempt") or 1),
        pod=str(status.get("assignedPod") or ""),
        pod_uid=str(status.get("assignedPodUID") or ""),
        function="function" in (spec.get("mode") or {}),
        terminating=bool(metadata.get("deletionTimestamp")),
    )


class Ownership:
    """The process's routing knowledge; the hub's thread writes it, the event loop reads it."""

    def __init__(self) -> None:
        self.runs: dict[tuple[str, str], Owner] = {}
        self.addresses: dict[str, str] = {}  # pod uid -> dataplane address
        self._absent: OrderedDict[tuple[str, str], tuple[float, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._listener: _Listener | None = None
        self._hub: watch.Hub | None = None

    # --- the hub's side ---------------------------------------------------------------------

    def listen(self, hub: watch.Hub | None = None) -> None:
        """Subscribe to the hub's changes (once; before the first database read, so no
        change between the read and the subscription is lost)."""
        if self._listener is not None:
            return
        try:
            with self._lock:
                if self._listener is None:
                    self._hub = hub or watch.hub()
                    listener = _Listener(self)
                    self._hub.subscribe(listener)  # reads the history's newest version
                    self._listener = listener
        finally:
            if not connection.in_atomic_block:
                connection.close()

    def stop(self) -> None:
        if self._listener is not None and self._hub is not None:
            self._hub.unsubscribe(self._listener)
        self._listener = None

    def apply(self, changes: list[watch.Change]) -> None:
        runs, pods = _kind_key(Run), _kind_key(RuntimePod)
        for change in changes:
            if change.kind_key == runs:
                self._apply_run(change)
            elif change.kind_key == pods and (
                change.type == history.DELETED
                or (change.object.get("status") or {}).get("phase") == "Terminating"
            ):
                uid = str((change.object.get("metadata") or {}).get("uid") or "")
                self.addresses.pop(uid, None)

    def _apply_run(self, change: watch.Change) -> None:
        key = (change.namespace, change.name)
        with self._lock:
            if change.type == history.DELETED:
                self.runs.pop(key, None)
                self._remember_absent(key, change.version)
                return
            self._absent.pop(key, None)  # it exists now, whatever it is
            owner = owner_of(change.object, change.version)
            known = self.runs.get(key)
            if known is None and (not owner.function or owner.phase in TERMINAL_PHASES):
                # nothing to route (a task Run), or never again (a finished Run): kept only
                # once asked about, so finished Runs do not pile up in every web process
                return
            if known is None or known.version < owner.version:
                self.runs[key] = owner

    # --- the invocation's side --------------------------------------------------------------

    def known(self, namespace: str, name: str) -> Owner | None:
        return self.runs.get((namespace, name))

    def absent(self, namespace: str, name: str) -> bool:
        found = self._absent.get((namespace, name))
        return found is not None and found[0] > time.monotonic()

    def forget(self, namespace: str, name: str) -> None:
        """Drop what is known of a Run (the dataplane denied it): the next call reads it."""
        with self._lock:
            self.runs.pop((namespace, name), None)

    def forget_address(self, pod_uid: str) -> None:
        self.addresses.pop(pod_uid, None)

    def learn(self, namespace: str, name: str, read: Read) -> Owner | None:
        """Keep what one database read found, unless a newer change arrived meanwhile."""
        key = (namespace, name)
        with self._lock:
            if read.owner is None:
                if key not in self.runs:
                    self._remember_absent(key, read.version)
                return self.runs.get(key)
            known = self.runs.get(key)
            tomb = self._absent.get(key)
            if tomb is not None and tomb[1] > read.owner.version:
                return None  # deleted after what was read
            if known is None or known.version < read.owner.version:
                self.runs[key] = read.owner
                self._absent.pop(key, None)
                known = read.owner
            if read.address and read.owner.pod_uid:
                self.addresses[read.owner.pod_uid] = read.address
            return known

    def learn_address(self, pod_uid: str, address: str) -> None:
        if address:
            self.addresses[pod_uid] = address

    def _remember_absent(self, key: tuple[str, str], version: int) -> None:
        self._absent.pop(key, None)
        self._absent[key] = (time.monotonic() + ABSENT_SECONDS, version)
        while len(self._absent) > ABSENT_ENTRIES:
            self._absent.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self.runs.clear()
            self.addresses.clear()
            self._absent.clear()


@dataclass(frozen=True, slots=True)
class Read:
    owner: Owner | None
    address: str  # the assigned pod's dataplane address ("" unknown)
    version: int  # the history version the read saw at least


def _kind_key(model: type) -> str:
    kind = registry.for_model(model)
    assert kind is not None
    return kind.key


class _Listener(watch.Watcher):
    """A hub watcher that hands every change straight to the ownership cache (no buffer)."""

    def __init__(self, ownership: Ownership) -> None:
        kind = registry.for_model(Run)
        assert kind is not None
        super().__init__(watch.parse_request(kind, None, {}, {}), after=0)
        self._ownership = ownership

    def offer(self, changes: list[watch.Change], progress: int) -> None:
        self.progress = max(self.progress, progress)
        if changes:
            self._ownership.apply(changes)


RUN_COLUMNS = (
    "uid",
    "resource_version",
    "phase",
    "attempt",
    "assigned_pod",
    "assigned_pod_uid",
    "spec__mode__function",
    "deletion_timestamp",
)


def read_sync(namespace: str, name: str, pod_uid: str = "") -> Read:
    """One Run (and its pod's address) as the database has it now; or only the address of
    ``pod_uid`` when the Run is known (the address was dropped)."""
    try:
        version = history.current()
        if pod_uid:
            return Read(None, _address(pod_uid), version)
        row = Run.objects.filter(namespace=namespace, name=name).values_list(*RUN_COLUMNS).first()
        if row is None:
            return Read(None, "", version)
        uid, resource_version, phase, attempt, pod, assigned_uid, function, deleting = row
        owner = Owner(
            uid=str(uid),
            version=int(resource_version),
            phase=str(phase),
            attempt=int(attempt),
            pod=str(pod),
            pod_uid=str(assigned_uid),
            function=function is not None,
            terminating=deleting is not None,
        )
        address = _address(owner.pod_uid) if owner.function and owner.pod_uid else ""
        return Read(owner, address, version)
    finally:
        if not connection.in_atomic_block:
            connection.close()


def _address(pod_uid: str) -> str:
    try:
        found = RuntimePod.objects.filter(uid=pod_uid).values_list("dataplane_address").first()
    except (ValueError, ValidationError):  # not a UUID: no such pod
        return ""
    return str(found[0]) if found else ""


read = sync_to_async(read_sync, thread_sensitive=False)
ownership = Ownership()
