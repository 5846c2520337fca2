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
import contextlib
import json
import os
import re
import secrets
import signal
from pathlib import Path
from typing import Any

import aiohttp
import aiohttp.web
import attrs
import kmock

from tests.helpers.kube import Emulator

POD_DIRS = ("work", "steps", "outputs")
_POD_PATH = re.compile(r"(?<![\w.-])/(work|steps|outputs)(?=/|$|[\s;'\")&|<>])")
V5, V4 = "v5.channel.k8s.io", "v4.channel.k8s.io"


@attrs.define(kw_only=True)
class PodEmulator(Emulator):
    root: Path
    ready_delay: float = 0.3
    # pod name -> the pids of its running execs (killed when the pod goes)
    processes: dict[str, set[int]] = attrs.field(factory=dict)
    execs: list[list[str]] = attrs.field(factory=list)  # every exec argv, as sent

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        resource = request.resource
        if resource is not None and resource.plural == "pods" and request.subresource == "exec":
            return await self._exec(request)
        response = await super()._handle(request)
        if resource is not None and resource.plural == "jobs" and response.status < 300:
            if request.method == "POST":
                self._start_pod(request.data)
            elif request.method == "DELETE" and request.name:
                self._delete_pods(request.namespace, request.name)
        return response

    # --- pods --------------------------------------------------------------------------------

    def pods(self) -> list[tuple[tuple[Any, str, str], Any]]:
        return [
            (key, obj)
            for key, obj in self.objects.items()
            if key[0].plural == "pods" and not obj.deleted
        ]

    def _start_pod(self, job: dict) -> None:
        meta = job["metadata"]
        template = job["spec"]["template"]
        name = f"{meta['name']}-{secrets.token_hex(3)[:5]}"
        labels = {
            **(template.get("metadata") or {}).get("labels", {}),
            "batch.kubernetes.io/job-name": meta["name"],
        }
        for sub in POD_DIRS:
            (self.root / name / sub).mkdir(parents=True, exist_ok=True)
        key = ("v1/pods", meta["namespace"], name)
        self.objects[key] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": meta["namespace"], "labels": labels},
            "spec": template["spec"],
            "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]},
        }
        asyncio.get_running_loop().call_later(self.ready_delay, self._ready, key)

    def _ready(self, key: tuple[str, str, str]) -> None:
        obj = None
        with contextlib.suppress(KeyError):
            obj = self.objects[key]
        if obj is None or obj.deleted:
            return
        obj.patch(
            {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
        )

    def _delete_pods(self, namespace: str, job_name: str) -> None:
        for key, obj in self.pods():
            labels = (obj.raw.get("metadata") or {}).get("labels") or {}
            if key[1] == namespace and labels.get("batch.kubernetes.io/job-name") == job_name:
                for pid in self.processes.pop(key[2], set()):
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(pid, signal.SIGKILL)
                obj.delete()

    def _pod(self, namespace: str, name: str) -> dict | None:
        for key, obj in self.pods():
            if key[1] == namespace and key[2] == name:
                return obj.raw
        return None

    def _environment(self, namespace: str, container: dict) -> dict[str, str]:
        env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"}
        for var in container.get("env") or []:
            if "value" in var:
                env[var["name"]] = var["value"]
                continue
            ref = (var.get("valueFrom") or {}).get("secretKeyRef") or {}
            for key, obj in self.objects.items():
                found = key[0].plural == "secrets" and key[1:] == (namespace, ref.get("name"))
                if found and not obj.deleted:
                    env[var["name"]] = (obj.raw.get("stringData") or {}).get(ref["key"], "")
        return env

    def _mapped(self, pod: str, text: str) -> str:
        return _POD_PATH.sub(lambda m: str(self.root / pod / m.group(1)), text)

    # --- exec --------------------------------------------------------------------------------

    async def _exec(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        raw = request._raw_request
        assert raw is not None
        pod = self._pod(request.namespace, request.name)
        if pod is None:
            raise kmock.KubernetesError(status=404, reason="NotFound", message="no such pod")
        argv = raw.query.getall("command", [])
        self.execs.append(list(argv))
        container = pod["spec"]["containers"][0]
        cwd = Path(self._mapped(request.name, container.get("workingDir") or "/work"))
        cwd.mkdir(parents=True, exist_ok=True)
        mapped = [self._mapped(request.name, arg) for arg in argv]
        ws = aiohttp.web.WebSocketResponse(protocols=[V5, V4])
        await ws.prepare(raw)
        leftover = [a.replace(str(self.root), "") for a in mapped]
        if any(re.search(r"(?<![\w.-])/work\b", a) for a in leftover):
            await self._status(ws, 126)
            return ws
        process = await asyncio.create_subprocess_exec(
            *mapped,
            cwd=cwd,
            env=self._environment(request.namespace, container),
            stdin=asyncio.subprocess.PIPE
            if raw.query.get("stdin") == "true"
            else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        self.processes.setdefault(request.name, set()).add(process.pid)

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
        self.processes.get(request.name, set()).discard(process.pid)
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
