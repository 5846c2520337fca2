"""What each ``krt`` subcommand does with its parsed arguments (``cli`` parses)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from . import artifacts, manifests, output, runs, workflows
from .connection import TABLE, Connection, Target
from .errors import KrtError
from .invoking import Invoker, endpoint_of
from .resources import RUNS, WORKFLOW_RUNS, Resource, lookup


def connect(args: argparse.Namespace) -> Connection:
    return Connection.open(
        Target(
            kubeconfig=getattr(args, "kubeconfig", None),
            context=getattr(args, "context", None),
            namespace=getattr(args, "namespace", None),
            as_user=getattr(args, "as_user", None),
        )
    )


def dispatch(args: argparse.Namespace) -> int:
    handler = HANDLERS[args.command]
    return handler(connect(args), args)


def created(
    obj: dict[str, Any], resource: Resource, fmt: str | None, verb: str = "created"
) -> None:
    if fmt in ("json", "yaml"):
        output.print_line(output.dump(obj, fmt))
    elif fmt == "name":
        output.print_line(output.names([obj], resource.qualified))
    else:
        output.print_line(f"{resource.qualified}/{obj['metadata']['name']} {verb}")


def do_run(conn: Connection, args: argparse.Namespace) -> int:
    body = manifests.task_run(
        namespace=conn.namespace,
        runtime=args.runtime,
        name=args.name,
        args=args.args,
        file=args.file,
        env=args.env,
        workspace=args.workspace,
        timeout=args.timeout,
    )
    run = runs.create(conn, body)
    name = run["metadata"]["name"]
    if not args.wait:
        created(run, RUNS, args.output)
        return 0
    output.progress(f"{RUNS.qualified}/{name} created")
    ended = runs.follow(conn, conn.namespace, name)
    if args.output in ("json", "yaml"):
        output.print_line(output.dump(ended, args.output))
    return runs.exit_code(ended)


def do_logs(conn: Connection, args: argparse.Namespace) -> int:
    if args.follow and args.attempt is None:  # from the start, through every retry
        runs.follow(conn, conn.namespace, args.run, report_end=False)
    else:
        runs.stream_log(
            conn, conn.namespace, args.run, follow=args.follow, attempt_number=args.attempt
        )
    return 0


def do_cancel(conn: Connection, args: argparse.Namespace) -> int:
    run = runs.cancel(conn, conn.namespace, args.run)
    output.print_line(f"{RUNS.qualified}/{run['metadata']['name']} cancel requested")
    return 0


def do_get(conn: Connection, args: argparse.Namespace) -> int:
    resource = lookup(getattr(args, "type", "runs"))
    namespace = None if args.all_namespaces else conn.namespace
    path = resource.path(namespace, args.name or "")
    query = {"labelSelector": args.selector} if args.selector and not args.name else {}
    fmt = args.output
    if fmt in ("json", "yaml", "name"):
        data = conn.json("GET", path, query=query)
        if fmt == "name":
            items = [data] if args.name else data.get("items") or []
            output.print_line(output.names(items, resource.qualified))
        else:
            output.print_line(output.dump(data, fmt))
        return 0
    table = conn.json("GET", path, query=query, accept=TABLE)
    if table.get("kind") != "Table":  # a server without Table output: names only
        items = [table] if args.name else table.get("items") or []
        table = {
            "columnDefinitions": [{"name": "Name"}],
            "rows": [{"cells": [i["metadata"]["name"]], "object": i} for i in items],
        }
    rows = output.table_rows(table, wide=fmt == "wide", namespace_column=namespace is None)
    if not rows:
        where = "" if namespace is None else f" in {namespace} namespace"
        output.progress(f"No resources found{where}.")
        return 0
    output.print_line(output.format_rows(rows))
    return 0


def do_artifacts(conn: Connection, args: argparse.Namespace) -> int:
    path = artifacts.download(conn, conn.namespace, args.run, args.artifact, args.output)
    if path is not None:
        output.progress(
            f"artifact {args.artifact} of run/{args.run} written to {path} (sha256 verified)"
        )
    return 0


def do_wf(conn: Connection, args: argparse.Namespace) -> int:
    ns = conn.namespace
    sub = args.wf_command
    if sub == "get":
        wfr = workflows.get_run(conn, ns, args.name)
        if args.output:
            output.print_line(output.dump(wfr, args.output))
        else:
            output.print_line(workflows.table(conn, wfr))
            output.print_line(workflows.summary(wfr))
        return 0
    sets = manifests.key_values(getattr(args, "set", []), "--set")
    if sub == "run":
        given = getattr(args, "namespace", None) is not None
        body = workflows.from_file(ns, args.filename, sets, args.name, namespace_given=given)
    elif sub == "trigger":
        body = workflows.trigger(ns, args.workflow, sets, args.name)
    else:
        body = workflows.rerun(conn, ns, args.run, args.failed, args.name, sets)
    wfr = workflows.create(conn, body)
    if not args.wait:
        created(wfr, WORKFLOW_RUNS, args.output)
        return 0
    output.progress(f"{WORKFLOW_RUNS.qualified}/{wfr['metadata']['name']} created")
    meta = wfr["metadata"]
    ended, done = workflows.follow(conn, meta["namespace"], meta["name"], args.timeout)
    return workflows.finish(conn, ended, done, args.timeout)


def do_invoke(conn: Connection, args: argparse.Namespace) -> int:
    if args.data is not None:
        body = args.data.encode()
    elif args.file:
        body = (
            sys.stdin.buffer.read() if args.file == "-" else manifests.read_text(args.file).encode()
        )
    elif not sys.stdin.isatty():
        body = sys.stdin.buffer.read()
    else:
        body = b"{}"
    try:
        json.loads(body or b"null")
    except ValueError as exc:
        raise KrtError(f"the body is not JSON: {exc}") from None
    run = conn.json("GET", RUNS.path(conn.namespace, args.run))
    url, ca = endpoint_of(run)
    invoker = Invoker(conn, url, ca)
    try:
        answer = invoker.invoke(body, invocation_id=args.invocation_id, timeout=args.timeout)
    finally:
        invoker.close()
    sys.stdout.buffer.write(answer if answer.endswith(b"\n") or not answer else answer + b"\n")
    sys.stdout.flush()
    return 0


HANDLERS = {
    "run": do_run,
    "logs": do_logs,
    "cancel": do_cancel,
    "get": do_get,
    "ls": do_get,
    "artifacts": do_artifacts,
    "wf": do_wf,
    "invoke": do_invoke,
}
