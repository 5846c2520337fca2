"""Workspace fencing (seed 002): a Run that uses a PersistentWorkspace goes only to the pod the
workspace is bound to, by name AND uid.

PreFilter resolves the workspace once per Run from the pass's snapshot (read once per pass).
A missing, Pending, Lost or Released workspace, or one of another Runtime, leaves the Run
Pending with a message that says so: none of these is a scheduling failure (a workspace change
requeues the Run). Filter then admits only the fenced pod.
"""

from __future__ import annotations

from ..framework import Plugin, State, Verdict
from ..snapshot import PendingRun, PodState, Snapshot

NAME = "WorkspaceFencing"
_STATE_KEY = "workspace"


def _verdict(reason: str, message: str) -> Verdict:
    return Verdict(reason=reason, message=message, fatal=False, plugin=NAME)


class WorkspaceFencing(Plugin):
    name = NAME

    def pre_filter(self, run: PendingRun, snapshot: Snapshot, state: State) -> Verdict | None:
        if not run.workspace:
            return None
        ws = snapshot.workspace(run.namespace, run.workspace)
        quoted = f'PersistentWorkspace "{run.workspace}"'
        if ws is None:
            return _verdict(
                "WorkspaceNotFound", f'{quoted} not found in namespace "{run.namespace}"'
            )
        if ws.runtime != run.runtime:
            return _verdict(
                "WorkspaceRuntimeMismatch",
                f'{quoted} belongs to Runtime "{ws.runtime}", not "{run.runtime}"',
            )
        if ws.deleting or ws.phase == "Released":
            return _verdict("WorkspaceReleased", f"{quoted} is Released: no new Run may use it")
        if ws.phase == "Lost":
            return _verdict(
                "WorkspaceLost",
                f"{quoted} is Lost: the Runtime Pod that held its data is gone; "
                "create a new PersistentWorkspace",
            )
        if ws.phase != "Bound":
            return _verdict(
                "WorkspacePending", f"waiting for {quoted} to be bound to a Runtime Pod"
            )
        state[_STATE_KEY] = ws
        return None

    def filters(self, run: PendingRun, state: State) -> bool:
        return _STATE_KEY in state  # the Run uses a workspace

    def pre_filter_pods(self, run: PendingRun, snapshot: Snapshot, state: State) -> set[str] | None:
        ws = state.get(_STATE_KEY)
        return None if ws is None else {ws.bound_pod}  # and its uid, which Filter checks

    def filter(
        self, run: PendingRun, pod: PodState, snapshot: Snapshot, state: State
    ) -> str | None:
        ws = state.get(_STATE_KEY)
        if ws is None or (pod.name == ws.bound_pod and pod.uid == ws.bound_pod_uid):
            return None
        return "WorkspaceFenced"
