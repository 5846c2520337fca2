"""A stopgap until the shared emulator simulates pods: batch Jobs get one pod, Ready after a
moment and deleted with the Job, and ``pods/exec`` is served as a ``v5.channel.k8s.io`` (or
v4) websocket running the command as a process in a per-pod directory.

A pod's ``/work``, ``/steps`` and ``/outputs`` are directories under ``root/<pod>``: the
command's argv names them by those paths and is rewritten to the real ones (an argv still
naming ``/work`` after that is refused, so nothing ever reaches this machine's own paths).
The container's working dir is the exec's cwd and its env (literal values and Secret keys)
the exec's environment, as an exec in a real container sees them.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import secrets
import signal
import threading
from pathlib import Path
from typing import Any

import aiohttp
import aiohttp.web
import attrs

from tests.helpers.emulator import api, errors
from tests.helpers.kube import Emulator

POD_DIRS = ("work", "steps", "outputs")
_POD_PATH = re.compile(r"(?<![\w.-])/(work|steps|outputs)(?=/|$|[\s;'\")&|<>])")
V5, V4 = "v5.channel.k8s.io", "v4.channel.k8s.io"


@attrs.define(kw_only=True)
class PodEmulator(Emulator):
    root: Path
    ready_delay: float = 0.3
    # pod name -> the process groups of its running execs (killed when the pod goes)
    processes: dict[str, set[int]] = attrs.field(factory=dict)
    execs: list[list[str]] = attrs.field(factory=list)  # every exec argv, as sent
    # every request: (method, path, the JSON body or None)
    calls: list[tuple[str, str, Any]] = attrs.field(factory=list)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self.store.listeners.append(self._on_event)

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        body = await raw_request.read()
        try:
            data = json.loads(body) if body else None
        except ValueError:
            data = None
        self.calls.append((raw_request.method.upper(), raw_request.path, data))
        where = api.route(raw_request.path)
        if where is not None and where.plural == "pods" and where.subresource == "exec":
            return await self._exec(raw_request, where)
        return await super().__call__(raw_request)

    def posted(self, plural: str) -> list[Any]:
        """The bodies of the creates of ``plural`` the server was sent."""
        return [
            data
            for method, path, data in self.calls
            if method == "POST" and (where := api.route(path)) and where.plural == plural
        ]

    # --- pods --------------------------------------------------------------------------------

    def pods(self) -> list[dict]:
        return self.store.select("", "pods", None)

    def _on_event(self, event: Any) -> None:
        if (event.group, event.plural, event.type) == ("batch", "jobs", "ADDED"):
            self._start_pod(event.obj)
        elif (event.group, event.plural, event.type) == ("", "pods", "DELETED"):
            for pgid in self.processes.pop(event.obj["metadata"]["name"], set()):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pgid, signal.SIGKILL)

    def _start_pod(self, job: dict) -> None:
        meta = job["metadata"]
        template = job["spec"]["template"]
        name = f"{meta['name']}-{secrets.token_hex(3)[:5]}"
        labels = {
            **((template.get("metadata") or {}).get("labels") or {}),
            "batch.kubernetes.io/job-name": meta["name"],
            "batch.kubernetes.io/controller-uid": meta["uid"],
        }
        for sub in POD_DIRS:
            (self.root / name / sub).mkdir(parents=True, exist_ok=True)
        owner = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        pod = {
            "metadata": {"name": name, "labels": labels, "ownerReferences": [owner]},
            "spec": template["spec"],
        }
        self.store.create("", "pods", meta["namespace"], pod)
        timer = threading.Timer(self.ready_delay, self._ready, (meta["namespace"], name))
        timer.daemon = True
        timer.start()

    def _ready(self, namespace: str, name: str) -> None:
        def ready(pod: dict) -> dict:
            pod["status"] = {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}],
            }
            return pod

        with contextlib.suppress(Exception):  # deleted meanwhile
            self.store.patch("", "pods", namespace, name, ready, subresource="status")

    def _environment(self, namespace: str, container: dict) -> dict[str, str]:
        env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"}
        for var in container.get("env") or []:
            if "value" in var:
                env[var["name"]] = var["value"]
                continue
            ref = (var.get("valueFrom") or {}).get("secretKeyRef") or {}
            secret = self.store.find("", "secrets", namespace, ref.get("name", ""))
            if secret is None:
                continue
            if ref["key"] in (secret.get("stringData") or {}):
                env[var["name"]] = secret["stringData"][ref["key"]]
            elif ref["key"] in (secret.get("data") or {}):
                env[var["name"]] = base64.b64decode(secret["data"][ref["key"]]).decode()
        return env

    def _mapped(self, pod: str, text: str) -> str:
        return _POD_PATH.sub(lambda m: str(self.root / pod / m.group(1)), text)

    # --- exec --------------------------------------------------------------------------------

    async def _exec(self, raw: aiohttp.web.BaseRequest, where: Any) -> aiohttp.web.StreamResponse:
        pod = self.store.find("", "pods", where.namespace, where.name or "")
        if pod is None:
            return api.status_response(errors.not_found("", "pods", where.name or ""))
        name = where.name
        argv = raw.query.getall("command", [])
        self.execs.append(list(argv))
        container = pod["spec"]["containers"][0]
        cwd = Path(self._mapped(name, container.get("workingDir") or "/work"))
        cwd.mkdir(parents=True, exist_ok=True)
        mapped = [self._mapped(name, arg) for arg in argv]
        ws = aiohttp.web.WebSocketResponse(protocols=[V5, V4])
        await ws.prepare(raw)
        leftover = [a.replace(str(self.root), "") for a in mapped]
        if any(re.search(r"(?<![\w.-])/work\b", a) for a in leftover):
            await self._status(ws, 126)
            return ws
        wants_stdin = raw.query.get("stdin") in ("true", "1")
        process = await asyncio.create_subprocess_exec(
            *mapped,
            cwd=cwd,
            env=self._environment(where.namespace, container),
            stdin=asyncio.subprocess.PIPE if wants_stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        self.processes.setdefault(name, set()).add(process.pid)

        async def pump(stream: asyncio.StreamReader, channel: int) -> None:
            while chunk := await stream.read(65536):
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await ws.send_bytes(bytes([channel]) + chunk)

        async def feed() -> None:
            async for message in ws:
                if message.type != aiohttp.WSMsgType.BINARY or not message.data:
                    continue
                data = message.data
                if data[0] == 0 and process.stdin is not None:
                    process.stdin.write(data[1:])
                    await process.stdin.drain()
                elif data[0] == 255 and data[1:2] == b"\x00" and process.stdin is not None:
                    process.stdin.close()
            # the client went away: its process dies with the stream
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)

        feeder = asyncio.ensure_future(feed())
        assert process.stdout is not None and process.stderr is not None
        await asyncio.gather(pump(process.stdout, 1), pump(process.stderr, 2))
        code = await process.wait()
        self.processes.get(name, set()).discard(process.pid)
        if not ws.closed:
            await self._status(ws, code if code >= 0 else 128 - code)
        feeder.cancel()
        return ws

    @staticmethod
    async def _status(ws: aiohttp.web.WebSocketResponse, code: int) -> None:
        if code == 0:
            status: dict = {"metadata": {}, "status": "Success"}
        else:
            status = {
                "metadata": {},
                "status": "Failure",
                "message": f"command terminated with non-zero exit code: {code}",
                "reason": "NonZeroExitCode",
                "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
            }
        with contextlib.suppress(ConnectionError, RuntimeError):
            await ws.send_bytes(b"\x03" + json.dumps(status).encode())
            await ws.close()
