"""The Workflow controller (seed 002, API.md): runs a WorkflowRun's jobs, each step as a child Run.

Level-triggered and idempotent: ``reconcile`` reads the WorkflowRun and the children it owns
(found by their deterministic names, checked by label and controller ownerReference), computes
the whole status from them, creates the next child that is due, and writes the status. Running
it again changes nothing until a child moves.

- A job starts when every job in its ``needs`` succeeded; jobs without a dependency between them
  run in parallel. A job whose need failed (or was skipped) is Skipped.
- A steps job gets a job-local PersistentWorkspace owned by the WorkflowRun (spec from settings,
  never from the Workflow); its steps run in order, each a child Run referencing it; a later
  step also gets required Run affinity to the job's earlier Runs by the controller labels.
- Expressions are resolved into ``run``, ``args``, ``env`` (and ``with``); one that cannot be
  resolved fails the step before any Run is made for it. A step's ``artifacts`` become the
  generic ``Run.spec.artifactInputs`` from the producing job's status; a name the job did not
  produce fails the step deterministically.
- ``uses: <Action>`` steps expand to the Action's run steps; ``uses: <Workflow>`` jobs run as a
  child WorkflowRun (which owns its own job workspaces).
- Before its first child a run gets its snapshot (``workflows.snapshots``: the spec and the
  Actions and Workflows it calls, in a ControllerRevision it owns, ``status.snapshotName``);
  every pass computes from it. Each job's ``pre`` is its direct needs, sorted.
- A rerun of failed jobs only (``spec.rerunOf``, ``workflows.reruns``) starts with the jobs
  that succeeded in the old run as they were there (from its snapshot), and owns their Runs too.
- ``cancelRequested`` cancels the active children (child WorkflowRuns too) and ends the run
  Cancelled; a WorkflowRun whose caller at any level is cancelled is cancelled with it, and a
  call that would nest WorkflowRuns too deep fails its job (``workflows.calls``).

The scheduler and runtimed see none of this: only Runs, workspaces, labels and affinity.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from portal import events_recorder
from portal.auth.identities import controller
from portal.machinery import store
from portal.machinery.admission import WriteContext
from portal.machinery.errors import StatusError
from portal.machinery.registry import registry
from portal.models import ControllerRevision
from scheduling.models import ACTIVE_PHASES, TERMINAL_PHASES, Run, RunPhase, Runtime
from workspaces.models import PersistentWorkspace, WorkspacePhase
from workspaces.ownership import WORKFLOW_CONTROLLER

from . import calls, expressions, reruns, run_events, snapshots
from . import status as run_status
from .expressions import Unresolved, Values
from .models import FINISHED_RUN_PHASES, JobPhase, StepPhase, WorkflowRun, WorkflowRunPhase
from .names import (
    API_VERSION,
    JOB_LABEL,
    UID_LABEL,
    child_labels,
    child_name,
    owned_by,
    second_name,
)
from .names import owner_reference as owner_of

log = logging.getLogger(__name__)

TOPOLOGY = "kruntimes.io/runtime-pod"
DONE_JOBS = (JobPhase.SUCCEEDED, JobPhase.FAILED, JobPhase.SKIPPED)
FAILED_RUN_PHASES = (RunPhase.FAILED, RunPhase.TIMEOUT, RunPhase.CANCELLED)
TAKEN = "NameTaken"  # a create refused because another object holds the name (a 409)


class StepError(Exception):
    """A step that cannot start: an unresolvable expression, a missing artifact or Action."""


def context() -> WriteContext:
    return WriteContext(user=controller(WORKFLOW_CONTROLLER))


def _kind(name: str, api_version: str = API_VERSION):
    return registry.for_manifest(api_version, name)


def order(jobs: dict[str, Any]) -> list[str]:
    """Jobs so that each comes after its needs (admission refuses cycles; a cycle that got in
    anyway leaves its jobs out rather than looping)."""
    done: list[str] = []
    remaining = dict(jobs)
    while remaining:
        ready = sorted(
            job for job, spec in remaining.items() if set(spec.get("needs") or []) <= set(done)
        )
        if not ready:
            break
        done += ready
        for job in ready:
            del remaining[job]
    return done


@dataclass(frozen=True)
class JobPlace:
    """Where a job's steps run: its id, its spec and its workspace's name."""

    job: str
    spec: dict
    workspace: str


@dataclass(frozen=True)
class ChildStep:
    """One child Run to be: the step (or Action step), its Run's name, the values its
    expressions read, and whether it is the job's first (no affinity to an earlier Run)."""

    step: dict
    name: str
    values: Values
    first: bool


KINDS = {
    "Run": Run,
    "PersistentWorkspace": PersistentWorkspace,
    "WorkflowRun": WorkflowRun,
    snapshots.KIND: ControllerRevision,
}


@dataclass
class Children:
    """What a WorkflowRun owns: the children it recorded creating (``status.children``), by
    name; and the names it would give a child that others hold (``taken``: not ours)."""

    runs: dict[str, Run] = field(default_factory=dict)
    workspaces: dict[str, PersistentWorkspace] = field(default_factory=dict)
    workflow_runs: dict[str, WorkflowRun] = field(default_factory=dict)
    revisions: dict[str, ControllerRevision] = field(default_factory=dict)  # the snapshot
    recorded: list[dict] = field(default_factory=list)  # {kind, name, uid}, as in the status
    taken: set[tuple[str, str]] = field(default_factory=set)  # (kind, name)

    def by_kind(self, kind_name: str) -> dict[str, Any]:
        return {
            "Run": self.runs,
            "PersistentWorkspace": self.workspaces,
            "WorkflowRun": self.workflow_runs,
            snapshots.KIND: self.revisions,
        }[kind_name]

    def find(self, kind_name: str, wfr: WorkflowRun, name: str) -> Any:
        """The recorded child made for ``name``: under it, or under its second name."""
        found = self.by_kind(kind_name)
        return found.get(name) or found.get(second_name(wfr, name))


def _names(wfr: WorkflowRun) -> tuple[set[str], set[str]]:
    """(child Run names, job-level names: workspaces and called WorkflowRuns)."""
    runs, jobs = set(), set()
    for job, spec in (wfr.spec.get("jobs") or {}).items():
        jobs.add(child_name(wfr.name, job))
        for step in spec.get("steps") or []:
            runs.add(child_name(wfr.name, job, step["name"]))
    return runs, jobs


def adopt(wfr: WorkflowRun) -> list[dict]:
    """A WorkflowRun from before children were recorded: what it owned then (by name or its
    label, and its controller ownerReference), recorded once and trusted from then on."""
    run_names, job_names = _names(wfr)
    ns = wfr.namespace
    found = list(
        Run.objects.filter(namespace=ns, name__in=run_names)
        | Run.objects.filter(namespace=ns, **{f"labels__{UID_LABEL}": str(wfr.uid)})
    )
    found += PersistentWorkspace.objects.filter(namespace=ns, name__in=job_names)
    found += WorkflowRun.objects.filter(namespace=ns, name__in=job_names)
    found += ControllerRevision.objects.filter(namespace=ns, name=snapshots.snapshot_name(wfr))
    kinds = {model: name for name, model in KINDS.items()}
    return [
        {"kind": kinds[type(obj)], "name": obj.name, "uid": str(obj.uid)}
        for obj in found
        if owned_by(obj, wfr)
    ]


def load_children(wfr: WorkflowRun) -> Children:
    status = wfr.status or {}
    recorded = status.get("children")
    if recorded is None:
        # a new WorkflowRun has no status yet; one the controller ran before has a phase
        recorded = adopt(wfr) if status.get("phase") else []
    children = Children(recorded=list(recorded))
    run_names, job_names = _names(wfr)
    for kind_name, model in KINDS.items():
        uids = {c["uid"] for c in recorded if c.get("kind") == kind_name}
        names = {"Run": run_names, snapshots.KIND: {snapshots.snapshot_name(wfr)}}.get(
            kind_name, job_names
        )
        # one read per kind: the children recorded (by UID) and whoever holds their names
        found = model.objects.filter(namespace=wfr.namespace).filter(
            Q(uid__in=uids) | Q(name__in=names)
        )
        mine = children.by_kind(kind_name)
        held = set()
        for obj in found:
            if str(obj.uid) in uids:
                mine[obj.name] = obj
            else:
                held.add(obj.name)
        children.taken |= {(kind_name, n) for n in held - set(mine)}
    return children


class Reconciler:
    """The computation of one pass over one WorkflowRun: its status from the children
    observed, and the writes (``planned``) that status needs. It writes nothing itself."""

    def __init__(
        self,
        wfr: WorkflowRun,
        now: datetime,
        children: Children,
        refused: dict[tuple[str, str], str] | None = None,
        callers: list[WorkflowRun] | None = None,
        runtimes: set[str] | None = None,
    ) -> None:
        self.wfr, self.now, self.children = wfr, now, children
        # what the run runs: its recorded snapshot (what it would hold, before one is made)
        recorded = next(iter(children.revisions.values()), None)
        self.snapshot_name = recorded.name if recorded is not None else ""
        self.snapshot: dict = recorded.data if recorded is not None else snapshots.resolve(wfr)
        self.spec = self.snapshot.get("spec") or {}
        self.jobs: dict[str, dict] = {}
        callers = callers or []
        self.depth = len(callers) + 1  # levels of calls down to this WorkflowRun
        self.cancel = wfr.cancel_requested or any(c.cancel_requested for c in callers)
        self.refused = refused or {}  # (kind, name) -> why its create was refused
        self.planned: list[Write] = []  # what this pass's state needs written, in order
        # the Runtimes that exist of those the jobs run on (None: not looked up, all assumed)
        self.runtimes = runtimes

    # --- the whole run ------------------------------------------------------------------

    def status(self) -> dict:
        previous = (self.wfr.status or {}).get("jobs") or {}
        specs = self.spec.get("jobs") or {}
        for job in order(specs):
            self.jobs[job] = self.job(job, specs[job], previous.get(job) or {})
        for job in set(specs) - set(self.jobs):  # only a cycle can leave one out
            self.jobs[job] = {"phase": JobPhase.FAILED, "message": "job is in a needs cycle"}
        for job, spec in specs.items():
            if spec.get("needs"):  # kruntimes' JobStatus.pre: the direct needs, sorted
                self.jobs[job] = {**self.jobs[job], "pre": sorted(spec["needs"])}
        phase, message, outputs = self.overall()
        status = {
            **(self.wfr.status or {}),
            "phase": phase,
            "jobs": self.jobs,
            "message": message,
            "children": list(self.children.recorded),
        }
        if self.snapshot_name:
            status["snapshotName"] = self.snapshot_name
        if outputs is not None:
            status["outputs"] = outputs
        return run_status.run_conditions(status, self.wfr, self.now)

    def overall(self) -> tuple[str, str, dict | None]:
        phases = {job: s["phase"] for job, s in self.jobs.items()}
        if any(phase not in DONE_JOBS for phase in phases.values()):
            waiting = [s.get("message") for s in self.jobs.values() if s["phase"] == "Waiting"]
            return WorkflowRunPhase.RUNNING, next((m for m in waiting if m), ""), None
        if self.cancel:
            return WorkflowRunPhase.CANCELLED, "cancelled", None
        failed = sorted(job for job, phase in phases.items() if phase == JobPhase.FAILED)
        if failed:
            first = self.jobs[failed[0]].get("message") or "failed"
            return WorkflowRunPhase.FAILED, f"job {failed[0]} failed: {first}", None
        try:
            outputs = {
                name: expressions.resolve(str(out.get("value", "")), self.values())
                for name, out in (self.spec.get("outputs") or {}).items()
            }
        except Unresolved as exc:
            return WorkflowRunPhase.FAILED, f"workflow outputs: {exc}", None
        return WorkflowRunPhase.SUCCEEDED, "", outputs

    def values(self, steps: dict[str, dict] | None = None, needs: list[str] | None = None):
        jobs = self.jobs if needs is None else {n: self.jobs.get(n, {}) for n in needs}
        return Values(
            inputs={k: str(v) for k, v in (self.spec.get("inputs") or {}).items()},
            steps=steps or {},
            jobs={name: job.get("outputs") or {} for name, job in jobs.items()},
        )

    # --- one job -------------------------------------------------------------------------

    def job(self, job: str, spec: dict, previous: dict) -> dict:
        carried = (self.snapshot.get("carried") or {}).get(job)
        if carried is not None:  # a rerun of failed jobs only: it succeeded in the old run
            return carried
        if previous.get("phase") in DONE_JOBS:
            return previous  # settled: a finished job never changes
        needs = spec.get("needs") or []
        blocked = [n for n in needs if self.jobs[n]["phase"] in (JobPhase.FAILED, JobPhase.SKIPPED)]
        if blocked:
            return {
                "phase": JobPhase.SKIPPED,
                "message": f"needs {blocked[0]}, which did not succeed",
            }
        if any(self.jobs[n]["phase"] != JobPhase.SUCCEEDED for n in needs):
            if self.cancel:
                return {"phase": JobPhase.SKIPPED, "message": "the WorkflowRun was cancelled"}
            return {"phase": JobPhase.PENDING}
        if spec.get("uses"):
            return self.called_job(job, spec)
        if self.cancel and not previous.get("steps"):
            return {"phase": JobPhase.SKIPPED, "message": "the WorkflowRun was cancelled"}
        return self.steps_job(job, spec)

    def steps_job(self, job: str, spec: dict) -> dict:
        waiting = self.runtime_missing(job, spec)
        if waiting is not None:
            return waiting
        workspace, problem = self.workspace(job, spec)
        if problem is not None:
            return problem
        steps: list[dict] = []
        outputs_by_step: dict[str, dict] = {}
        artifacts: dict[str, dict] = {}
        result: dict = {"phase": JobPhase.RUNNING, "steps": steps}
        for index, step in enumerate(spec.get("steps") or []):
            state = self.step(JobPlace(job, spec, workspace), index, step, outputs_by_step)
            steps.append(state["status"])
            if state["status"]["phase"] == StepPhase.SUCCEEDED:
                outputs_by_step[step["name"]] = state["status"].get("outputs") or {}
                for ref in state.get("artifacts", []):
                    artifacts[ref["name"]] = ref  # a later step's artifact of a name wins
                continue
            if state["status"]["phase"] == StepPhase.FAILED:
                result.update(phase=JobPhase.FAILED, message=state["message"])
            elif state.get("waiting"):
                result.update(phase=JobPhase.WAITING, message=state["waiting"])
            for later in (spec.get("steps") or [])[index + 1 :]:
                steps.append({"name": later["name"], "phase": StepPhase.PENDING})
            return result
        try:
            values = self.values(outputs_by_step, spec.get("needs") or [])
            outputs = {
                key: expressions.resolve(str(expr), values)
                for key, expr in (spec.get("outputs") or {}).items()
            }
        except Unresolved as exc:
            return {**result, "phase": JobPhase.FAILED, "message": f"job outputs: {exc}"}
        return {**result, "phase": JobPhase.SUCCEEDED, "outputs": outputs, "artifacts": artifacts}

    def runtime_missing(self, job: str, spec: dict) -> dict | None:
        """A job not started whose ``runs-on`` names no Runtime waits for it, saying so, and
        makes nothing (a typo would otherwise leave a workspace and Runs Pending forever);
        it starts on the first pass after the Runtime is created."""
        runtime = str(spec.get("runs-on") or "")
        if self.runtimes is None or runtime in self.runtimes:
            return None
        if self.children.find("PersistentWorkspace", self.wfr, child_name(self.wfr.name, job)):
            return None  # started: its Runs say what became of them
        return {
            "phase": JobPhase.WAITING,
            "reason": RUNTIME_NOT_FOUND,
            "message": f'job {job} runs on Runtime "{runtime}", which does not exist in '
            f'namespace "{self.wfr.namespace}": it starts once that Runtime is created',
        }

    def workspace(self, job: str, spec: dict) -> tuple[str, dict | None]:
        """The job's workspace, made if missing; a problem status when the job cannot go on."""
        name = child_name(self.wfr.name, job)
        ws = self.children.find("PersistentWorkspace", self.wfr, name)
        if ws is None:
            made = self.create(
                "PersistentWorkspace",
                {
                    "metadata": {
                        "name": name,
                        "labels": child_labels(self.wfr, job),
                        "ownerReferences": [owner_of(self.wfr)],
                    },
                    "spec": {
                        "runtime": spec.get("runs-on", ""),
                        "ttlSecondsAfterUnused": settings.KRUNTIMES_WORKFLOW_WORKSPACE_TTL_SECONDS,
                        "cleanupPolicy": "DeleteAfterTTL",
                    },
                },
            )
            if made is None:
                return name, {"phase": JobPhase.FAILED, "message": self.last_error}
            return made, None
        if ws.phase == WorkspacePhase.LOST:
            message = "the job's workspace was lost with its Runtime Pod"
            return ws.name, {"phase": JobPhase.FAILED, "message": message}
        return ws.name, None

    def called_job(self, job: str, spec: dict) -> dict:
        """``uses: <Workflow>``: a child WorkflowRun, started once, followed to its end."""
        name = child_name(self.wfr.name, job)
        child = self.children.find("WorkflowRun", self.wfr, name)
        if child is None:
            try:
                body = self.called_spec(job, spec)
            except StepError as exc:
                return {"phase": JobPhase.FAILED, "message": str(exc)}
            if self.cancel:
                return {"phase": JobPhase.SKIPPED, "message": "the WorkflowRun was cancelled"}
            if self.depth >= calls.MAX_CALL_DEPTH:
                return calls.depth_exceeded(spec["uses"], self.depth)
            made = self.create(
                "WorkflowRun",
                {
                    "metadata": {
                        "name": name,
                        "labels": child_labels(self.wfr, job),
                        "ownerReferences": [owner_of(self.wfr)],
                    },
                    "spec": body,
                },
            )
            if made is None:
                return {"phase": JobPhase.FAILED, "message": self.last_error}
            return {"phase": JobPhase.RUNNING, "workflowRunName": made}
        name = child.name
        if self.cancel and not child.is_finished and not child.cancel_requested:
            self.patch("WorkflowRun", name, {"spec": {"cancelRequested": True}})
        state = {"workflowRunName": name}
        if child.phase == WorkflowRunPhase.SUCCEEDED:
            outputs = (child.status or {}).get("outputs") or {}
            return {**state, "phase": JobPhase.SUCCEEDED, "outputs": outputs}
        if child.is_finished:
            why = (child.status or {}).get("message") or child.phase
            return {**state, "phase": JobPhase.FAILED, "message": f"workflow {name}: {why}"}
        return {**state, "phase": JobPhase.RUNNING}

    def called_spec(self, job: str, spec: dict) -> dict:
        workflow = snapshots.workflow(self.snapshot, job)
        if workflow is None:
            raise StepError(f'Workflow "{spec["uses"]}" not found')
        called = workflow["spec"]
        values = self.values(needs=spec.get("needs") or [])
        given = self.resolve_map(spec.get("with") or {}, values)
        declared = called.get("inputs") or {}
        inputs = self.inputs_for(declared, given, f'Workflow "{workflow["name"]}"')
        return {
            "workflowRef": {"name": workflow["name"]},
            "inputs": inputs,
            "outputs": called.get("outputs") or {},
            "jobs": called.get("jobs") or {},
        }

    @staticmethod
    def inputs_for(declared: dict, given: dict[str, str], what: str) -> dict[str, str]:
        unknown = sorted(set(given) - set(declared))
        if unknown:
            raise StepError(f"{what} has no input {unknown[0]}")
        inputs = {}
        for name, spec in declared.items():
            if name in given:
                inputs[name] = given[name]
            elif "default" in (spec or {}):
                inputs[name] = str(spec["default"])
            elif (spec or {}).get("required"):
                raise StepError(f"{what} needs input {name}")
        return inputs

    @staticmethod
    def resolve_map(mapping: dict, values: Values) -> dict[str, str]:
        try:
            return {k: expressions.resolve(str(v), values) for k, v in mapping.items()}
        except Unresolved as exc:
            raise StepError(str(exc)) from None

    # --- one step ------------------------------------------------------------------------

    def step(self, place: JobPlace, index: int, step: dict, outputs: dict) -> dict:
        """{"status": StepStatus, "message"?, "waiting"?, "artifacts"?} of one step."""
        if step.get("uses"):
            return self.action_step(place, index, step, outputs)
        values = self.values(outputs, place.spec.get("needs") or [])
        name = child_name(self.wfr.name, place.job, step["name"])
        return self.run_child(place, ChildStep(step, name, values, first=index == 0))

    def action_step(self, place: JobPlace, index: int, step: dict, outputs: dict) -> dict:
        """``uses: <Action>``: its run steps in order, one child Run each, inside this step."""
        base = {"name": step["name"]}
        action = snapshots.action(self.snapshot, place.job, step["name"])
        if action is None:
            return self.failed(base, f'step {step["name"]}: Action "{step["uses"]}" not found')
        action_spec, action_name = action["spec"], action["name"]
        try:
            given = self.resolve_map(
                step.get("with") or {}, self.values(outputs, place.spec.get("needs"))
            )
            inputs = self.inputs_for(
                action_spec.get("inputs") or {}, given, f'Action "{action_name}"'
            )
        except StepError as exc:
            return self.failed(base, f"step {step['name']}: {exc}")
        inner: dict[str, dict] = {}
        statuses: list[dict] = []
        artifacts: list[dict] = []
        for position, action_step in enumerate(action_spec.get("steps") or []):
            values = Values(inputs=inputs, steps=inner, jobs={})
            name = child_name(self.wfr.name, place.job, step["name"], action_step["name"])
            first = index == 0 and position == 0
            state = self.run_child(place, ChildStep(action_step, name, values, first))
            statuses.append(state["status"])
            if state["status"]["phase"] != StepPhase.SUCCEEDED:
                return {
                    **state,
                    "status": {**base, "phase": state["status"]["phase"], "actionSteps": statuses},
                }
            inner[action_step["name"]] = state["status"].get("outputs") or {}
            artifacts += state.get("artifacts", [])
        try:
            values = Values(inputs=inputs, steps=inner, jobs={})
            result = {
                key: expressions.resolve(str(out.get("value", "")), values)
                for key, out in (action_spec.get("outputs") or {}).items()
            }
        except Unresolved as exc:
            return self.failed(base, f"step {step['name']}: Action outputs: {exc}")
        status = {**base, "phase": StepPhase.SUCCEEDED, "outputs": result, "actionSteps": statuses}
        return {"status": status, "artifacts": artifacts}

    @staticmethod
    def failed(base: dict, message: str) -> dict:
        return {"status": {**base, "phase": StepPhase.FAILED}, "message": message}

    def run_child(self, place: JobPlace, child: ChildStep) -> dict:
        step, name = child.step, child.name
        base = {"name": step["name"], "runName": name}
        run = self.children.find("Run", self.wfr, name)
        if run is None:
            if self.cancel:
                return {"status": {**base, "phase": StepPhase.PENDING}}
            try:
                manifest = self.run_manifest(place, child)
            except StepError as exc:
                return self.failed({"name": step["name"]}, f"step {step['name']}: {exc}")
            made = self.create("Run", manifest)
            if made is None:
                return self.failed(base, f"step {step['name']}: {self.last_error}")
            # what the next pass reads from the new Pending Run
            return self.pending({**base, "runName": made})
        name = base["runName"] = run.name
        if self.cancel and run.phase not in TERMINAL_PHASES and not run.cancel_requested:
            self.patch("Run", name, {"spec": {"cancelRequested": True}})
        return self.from_run(base, run)

    @staticmethod
    def from_run(base: dict, run: Run) -> dict:
        status = run.status or {}
        if run.phase == RunPhase.SUCCEEDED:
            done = {**base, "phase": StepPhase.SUCCEEDED, "outputs": status.get("outputs") or {}}
            return {"status": done, "artifacts": list(status.get("artifactRefs") or [])}
        if run.phase in FAILED_RUN_PHASES:
            why = status.get("reason") or run.phase
            detail = status.get("message") or ""
            message = f"step {base['name']}: Run {run.name} {run.phase} ({why}){': ' if detail else ''}{detail}"
            return {"status": {**base, "phase": StepPhase.FAILED}, "message": message}
        if run.phase in ACTIVE_PHASES:
            return {"status": {**base, "phase": StepPhase.RUNNING}}
        return Reconciler.pending(base)

    @staticmethod
    def pending(base: dict) -> dict:
        return {
            "status": {**base, "phase": StepPhase.PENDING},
            "waiting": f"step {base['name']} waits for a Runtime Pod with room for it "
            "(its job's local workspace lives on one pod)",
        }

    def run_manifest(self, place: JobPlace, child: ChildStep) -> dict:
        job, spec, step, values = place.job, place.spec, child.step, child.values
        try:
            script = expressions.resolve(step.get("run") or "", values)
            args = [expressions.resolve(str(a), values) for a in step.get("args") or []]
            env = [
                {"name": k, "value": expressions.resolve(str(v), values)}
                for k, v in (step.get("env") or {}).items()
            ]
        except Unresolved as exc:
            raise StepError(str(exc)) from None
        run_spec: dict[str, Any] = {
            "runtime": spec.get("runs-on", ""),
            "source": {"inline": script},
            "mode": {"task": {"args": args} if args else {}},
            "workspace": {"name": place.workspace},
        }
        if env:
            run_spec["env"] = env
        inputs = self.artifact_inputs(step, spec)
        if inputs:
            run_spec["artifactInputs"] = inputs
        if not child.first:
            # co-located with the job's earlier Runs, by labels only the controller sets
            selector = {"matchLabels": {UID_LABEL: str(self.wfr.uid), JOB_LABEL: job}}
            run_spec["affinity"] = {
                "runAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": selector, "topologyKey": TOPOLOGY}
                    ]
                }
            }
        return {
            "metadata": {
                "name": child.name,
                "labels": child_labels(self.wfr, job, step["name"]),
                "ownerReferences": [owner_of(self.wfr)],
            },
            "spec": run_spec,
        }

    def artifact_inputs(self, step: dict, spec: dict) -> list[dict]:
        inputs = []
        for item in step.get("artifacts") or []:
            source = str(item.get("from", ""))
            parts = source.split(".", 3)
            if len(parts) != 4 or parts[0] != "jobs" or parts[2] != "artifacts":
                raise StepError(f"artifact {source}: not jobs.<job>.artifacts.<name>")
            producer, artifact = parts[1], parts[3]
            ref = ((self.jobs.get(producer) or {}).get("artifacts") or {}).get(artifact)
            if ref is None:
                raise StepError(f"job {producer} produced no artifact named {artifact}")
            inputs.append({"ref": ref, "path": item.get("path", artifact)})
        return inputs

    # --- the writes a pass plans (``act`` makes them) -----------------------------------

    last_error = ""

    def create(self, kind_name: str, manifest: dict) -> str | None:
        """Plan a child's creation under its name, or its second name when another object
        holds the first (``taken`` when loaded, or a 409 in an earlier ``act`` of this pass);
        the name, or None when it was refused (``last_error`` says why)."""
        first = manifest["metadata"]["name"]
        name = first
        if (kind_name, first) in self.children.taken or self.refused.get(
            (kind_name, first)
        ) == TAKEN:
            name = second_name(self.wfr, first)
        refused = self.refused.get((kind_name, name))
        if refused is not None:
            self.last_error = (
                f"a {kind_name} named {name} exists and is not this WorkflowRun's"
                if refused == TAKEN
                else refused
            )
            return None
        body = {**manifest, "metadata": {**manifest["metadata"], "name": name}}
        self.planned.append(Write("create", kind_name, name, body, first if name != first else ""))
        return name

    def patch(self, kind_name: str, name: str, body: dict) -> None:
        self.planned.append(Write("patch", kind_name, name, body))


@dataclass(frozen=True)
class Write:
    """A write a pass decided on: create a child, or patch one."""

    verb: str  # "create" | "patch"
    kind: str
    name: str
    body: dict = field(compare=False)
    instead_of: str = field(default="", compare=False)  # the name a stranger holds


RUNTIME_NOT_FOUND = "RuntimeNotFound"


def runtimes_present(wfr: WorkflowRun, spec: dict) -> set[str]:
    """The Runtimes the steps jobs of ``spec`` run on that exist in the WorkflowRun's
    namespace (one read a pass)."""
    wanted = {
        str(job.get("runs-on") or "")
        for job in (spec.get("jobs") or {}).values()
        if isinstance(job, dict) and not job.get("uses")
    }
    return set(
        Runtime.objects.filter(namespace=wfr.namespace, name__in=wanted).values_list(
            "name", flat=True
        )
    )


class RaceLost(Exception):
    """The WorkflowRun changed while the pass made children: the pass's transaction (the
    children with it) is undone."""


def make_child(children: Children, wfr: WorkflowRun, write: Write) -> Any:
    """Create the child (``store.create`` writes in its own savepoint: a refused create undoes
    only itself) and add its UID to ``children.recorded``. Called inside the pass's transaction (``reconcile``), whose
    status write records every child the pass made: a child exists only if the controller
    recorded making it (the status write lost to a concurrent write undoes the creates)."""
    body = {"apiVersion": API_VERSION, "kind": write.kind, **write.body}
    obj = store.create(
        _kind(write.kind, body["apiVersion"]), body, namespace=wfr.namespace, context=context()
    )
    children.recorded.append({"kind": write.kind, "name": obj.name, "uid": str(obj.uid)})
    if write.instead_of:
        events_recorder.record(
            wfr,
            TAKEN,
            f"a {write.kind} named {write.instead_of} exists and is not this WorkflowRun's: "
            f"created {obj.name} instead",
            type=events_recorder.WARNING,
        )
    return obj


def act(
    wfr: WorkflowRun, children: Children, writes: list[Write], done: set[Write]
) -> tuple[int, dict]:
    """Make the planned writes in order, skipping those ``done`` already; stops at the first
    create refused. Returns (children created, {(kind, name): why} of the refusal)."""
    created = 0
    for write in writes:
        if write in done:
            continue
        done.add(write)
        if write.verb == "patch":
            try:
                store.patch(
                    _kind(write.kind), wfr.namespace, write.name, write.body, context=context()
                )
            except StatusError as exc:  # the next pass tries again
                log.info("WorkflowRun %s: cancelling %s deferred: %s", wfr.name, write.name, exc)
            continue
        try:
            make_child(children, wfr, write)
        except StatusError as exc:
            why = TAKEN if exc.code == 409 else exc.message  # someone else's: not ours to read
            log.warning(
                "WorkflowRun %s: %s %s refused: %s", wfr.name, write.kind, write.name, exc.message
            )
            return created, {(write.kind, write.name): why}
        created += 1
    return created, {}


def ensure_snapshot(wfr: WorkflowRun, children: Children) -> bool:
    """Make the run's snapshot (``workflows.snapshots``) once, before anything else, recorded
    in ``status.children`` like every child: under its second name when another object holds
    the first. Returns whether it made one. Raises snapshots.Unusable (too large, or recorded
    and gone: what the run resolved is lost), or the StatusError of a refused create."""
    if children.revisions:
        return False
    lost = [c["name"] for c in children.recorded if c.get("kind") == snapshots.KIND]
    if lost:
        raise snapshots.Unusable(f"the snapshot {lost[0]} of what this WorkflowRun runs is gone")
    first = snapshots.snapshot_name(wfr)
    data = snapshots.resolve(wfr)

    def create(name: str) -> ControllerRevision:
        body = snapshots.manifest(wfr, name, data)
        made = make_child(
            children, wfr, Write("create", snapshots.KIND, name, body, first * (name != first))
        )
        assert isinstance(made, ControllerRevision)
        return made

    if (snapshots.KIND, first) in children.taken:
        revision = create(second_name(wfr, first))
    else:
        try:
            revision = create(first)
        except StatusError as exc:
            if exc.code != 409:
                raise
            revision = create(second_name(wfr, first))
    children.revisions[revision.name] = revision
    return True


def reconcile(wfr: WorkflowRun, now: datetime) -> bool:
    """One pass: observe (the WorkflowRun and the children it recorded making), compute the
    status and the writes it needs (pure), act (make them), then write the status with the
    UIDs of the children made, in one transaction: a WorkflowRun written meanwhile undoes the
    pass (RaceLost), so no child exists that its WorkflowRun did not record. The snapshot is
    made first, in the same pass. A create refused is a fact the next computation knows (its
    step or job fails with the reason, or a child whose name is held by another object gets
    its second name); the pass computes again until its writes are made. Returns whether the
    status changed."""
    from .triggers import request_reconcile

    if wfr.is_finished or wfr.deletion_timestamp is not None:
        return False
    children = load_children(wfr)
    try:
        with transaction.atomic():
            return _pass(wfr, children, now)
    except RaceLost:
        request_reconcile(str(wfr.uid))  # computed from a WorkflowRun that changed
        return False
    except snapshots.Unusable as exc:
        before = dict(wfr.status or {})
        failed = {**before, "phase": WorkflowRunPhase.FAILED, "message": str(exc)}
        if not run_status.write(wfr, run_status.run_conditions(failed, wfr, now)):
            return False
        run_events.record(wfr, before, wfr.status or {})
        return True
    except StatusError as exc:  # the snapshot's create refused (act keeps the others): the beat
        log.warning("WorkflowRun %s: its pass was refused: %s", wfr.name, exc.message)
        return False


def _pass(wfr: WorkflowRun, children: Children, now: datetime) -> bool:
    """``reconcile``'s work inside its transaction; raises RaceLost when the status write
    recording the children made loses to another write of the WorkflowRun."""
    created = int(ensure_snapshot(wfr, children))
    callers = calls.callers(wfr)
    revision = next(iter(children.revisions.values()))
    if created and (wfr.spec or {}).get("rerunOf"):
        carried = (revision.data or {}).get("carried") or {}
        reruns.keep_carried(wfr, carried, context())
        reruns.record_link(wfr, carried)
    runtimes = runtimes_present(wfr, (revision.data or {}).get("spec") or {})
    refused: dict[tuple[str, str], str] = {}
    done: set[Write] = set()
    while True:
        reconciler = Reconciler(wfr, now, children, refused, callers, runtimes)
        status = reconciler.status()
        made, refusal = act(wfr, children, reconciler.planned, done)
        created += made
        if not refusal:
            break
        refused.update(refusal)
    if status.get("phase") in FINISHED_RUN_PHASES:
        release_unbound_workspaces(wfr, children)
    before = dict(wfr.status or {})
    changed = run_status.write(wfr, {**status, "children": list(children.recorded)})
    if created and not changed:
        raise RaceLost(wfr.name)
    if changed:
        run_events.record(wfr, before, wfr.status or {})
    return changed


def release_unbound_workspaces(wfr: WorkflowRun, children: Children) -> None:
    """A finished WorkflowRun's job workspaces that never bound (their Runtime had no pod
    with room, or does not exist) hold no bytes and would never reach their TTL (it counts
    from the last use): deleted with the pass that finishes the run. Bound ones keep their
    ``ttlSecondsAfterUnused``."""
    kind = _kind("PersistentWorkspace")
    for ws in children.workspaces.values():
        if ws.phase != WorkspacePhase.PENDING or ws.deletion_timestamp is not None:
            continue
        try:
            store.delete(
                kind,
                wfr.namespace,
                ws.name,
                preconditions={"uid": str(ws.uid), "resourceVersion": str(ws.resource_version)},
                context=context(),
            )
        except StatusError as exc:  # bound meanwhile, or gone: its TTL or nobody's concern
            log.info("WorkflowRun %s: workspace %s kept: %s", wfr.name, ws.name, exc.message)
