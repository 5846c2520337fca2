"""``krt wf``: start WorkflowRuns (from a file, a Workflow, or as a rerun), show their
job/step table and follow them. ``--wait`` prints a line per job whenever its phase
changes (on stderr), then the table; the exit status is 0 only when the run Succeeded."""

from __future__ import annotations

import sys
from typing import Any

from . import gha, manifests, wftable
from .connection import Connection
from .errors import ApiError, KrtError
from .output import format_rows, phase_text, print_line, progress
from .resources import RUNS, WORKFLOW_RUNS
from .watching import wait_for

FINISHED = ("Succeeded", "Failed", "Cancelled")
UID_LABEL = "kruntimes.io/workflowrun-uid"


def phase(wfr: dict[str, Any]) -> str:
    return str((wfr.get("status") or {}).get("phase") or "Pending")


def from_file(
    namespace: str,
    path: str,
    sets: dict[str, str],
    name: str | None,
    *,
    namespace_given: bool = False,
) -> dict[str, Any]:
    """The WorkflowRun a ``-f`` file asks for (``-`` reads stdin), ``--set`` as inputs. A
    manifest's own namespace wins over the context's; against ``-n`` it must agree (kubectl)."""
    text = sys.stdin.read() if path == "-" else manifests.read_text(path)
    loaded = gha.load(text, "<stdin>" if path == "-" else path)
    own = loaded.metadata.get("namespace")
    if own and own != namespace:
        if namespace_given:
            raise KrtError(
                f'the namespace from the provided object "{own}" does not match the namespace '
                f"\"{namespace}\". You must pass '--namespace={own}' to perform this operation."
            )
        namespace = str(own)
    spec = dict(loaded.spec)
    if sets:
        spec["inputs"] = {**(spec.get("inputs") or {}), **sets}
    body = manifests.workflow_run(
        namespace, spec, name=name or loaded.name, generate_from=loaded.generate_from
    )
    for key in ("labels", "annotations"):
        if loaded.metadata.get(key):
            body["metadata"][key] = loaded.metadata[key]
    return body


def trigger(
    namespace: str, workflow: str, sets: dict[str, str], name: str | None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"workflowRef": {"name": workflow}}
    if sets:
        spec["inputs"] = sets
    return manifests.workflow_run(namespace, spec, name=name, generate_from=workflow)


def rerun(
    conn: Connection,
    namespace: str,
    of: str,
    failed_only: bool,
    name: str | None,
    sets: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A new WorkflowRun of ``of``'s jobs (``spec.rerunOf``); the server copies the frozen
    jobs and inputs (``--set`` overrides known ones), and with ``failedJobsOnly`` carries
    over what the succeeded jobs produced."""
    get_run(conn, namespace, of)  # a clear NotFound before the create
    spec: dict[str, Any] = {"rerunOf": {"name": of, "failedJobsOnly": failed_only}}
    if sets:
        spec["inputs"] = sets
    return manifests.workflow_run(namespace, spec, name=name, generate_from=of)


def create(conn: Connection, body: dict[str, Any]) -> dict[str, Any]:
    return conn.json("POST", WORKFLOW_RUNS.path(body["metadata"]["namespace"]), body=body)


def step_runs(conn: Connection, wfr: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Name → status of the Runs its steps name (for durations and reasons): those it
    started, by its uid label, and those a rerun carried over from the run it reruns."""
    meta = wfr.get("metadata") or {}
    uids = [meta.get("uid"), ((wfr.get("spec") or {}).get("rerunOf") or {}).get("uid")]
    found: dict[str, dict[str, Any]] = {}
    for uid in filter(None, uids):
        listed = conn.json(
            "GET", RUNS.path(meta.get("namespace")), query={"labelSelector": f"{UID_LABEL}={uid}"}
        )
        for item in listed.get("items") or []:
            found.setdefault((item.get("metadata") or {}).get("name", ""), item.get("status") or {})
    return found


def table(conn: Connection, wfr: dict[str, Any]) -> str:
    rows = wftable.rows(wfr, step_runs(conn, wfr))
    return format_rows(rows)


def summary(wfr: dict[str, Any]) -> str:
    status = wfr.get("status") or {}
    line = f"workflowrun/{wfr['metadata']['name']} {phase_text(phase(wfr))}"
    message = status.get("message")
    return f"{line}: {message}" if message and phase(wfr) != "Succeeded" else line


def follow(
    conn: Connection, namespace: str, name: str, timeout: float | None
) -> tuple[dict[str, Any], bool]:
    """Wait until the run finishes, a progress line per job change on stderr."""
    shown: dict[str, str] = {}

    def report(wfr: dict[str, Any]) -> None:
        for job, now in wftable.job_progress(wfr).items():
            if shown.get(job) != now:
                shown[job] = now
                progress(f"job {job}: {now}")

    return wait_for(
        conn,
        WORKFLOW_RUNS,
        namespace,
        name,
        lambda w: phase(w) in FINISHED,
        timeout=timeout,
        on_change=report,
    )


def finish(conn: Connection, wfr: dict[str, Any], done: bool, timeout: float | None) -> int:
    print_line(table(conn, wfr))
    print_line(summary(wfr))
    if not done:
        progress(f"error: timed out after {timeout:g}s waiting for {wfr['metadata']['name']}")
        return 2
    return 0 if phase(wfr) == "Succeeded" else 1


def get_run(conn: Connection, namespace: str, name: str) -> dict[str, Any]:
    try:
        return conn.json("GET", WORKFLOW_RUNS.path(namespace, name))
    except ApiError as exc:
        if exc.status == 404:
            exc.message = f'workflowrun "{name}" not found in namespace "{namespace}"'
        raise
