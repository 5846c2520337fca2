"""Pod exec: ``GET/POST /api/v1/namespaces/{ns}/pods/{name}/exec`` as kube-apiserver serves it,
a websocket speaking ``v5.channel.k8s.io`` (preferred) or ``v4.channel.k8s.io``.

Frames are binary (text frames from the client are read the same way), the first byte the
channel: 0 stdin, 1 stdout, 2 stderr, 3 the exit Status, and in v5 ``[255, 0]`` closes
stdin (EOF). The exit is one Status on channel 3, then the close: ``{"metadata": {},
"status": "Success"}``, or ``"Failure"`` with reason ``NonZeroExitCode`` and the code as
``details.causes[0].message`` (a signal is ``128 + signal``, as containerd reports it).
A pod that is missing is 404; one not yet running (``does not have a host assigned``), a
completed one and a container that is not the pod's are 400, before the upgrade, as the
API server answers.

The command runs as a real subprocess of the test, in the pod's root directory
``<pods_dir>/<namespace>/<pod>/`` (``EmulatorServer.pod_root(ns, name)``), which is
created with ``work/``, ``outputs/`` and ``steps/`` and removed with the pod. Path mapping,
exactly: in every argv element, each absolute path that starts with ``/work``,
``/outputs`` or ``/steps`` (as a whole path component, not preceded by a word character,
``.``, ``-``, ``~`` or ``/``) is prefixed with the pod's root; so ``sh -ec 'cd /work && ...'``,
``tar xf - -C /work`` and ``tar cf - -C /outputs .`` act on the pod's directories. Nothing
else is translated: paths built at run time inside a script (``$DIR/x``) are not, ``ROOT``
is set to the pod's root for those. The environment is the test's, plus the container's
literal ``env`` values, the downward API's ``metadata.name``/``namespace``/``uid`` and
``status.podIP`` fields, ``HOME`` and ``ROOT`` = the root; cwd is the root. A websocket
closed by the client kills the process group (timeouts and cancels are real).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
from pathlib import Path

import aiohttp
import aiohttp.web

from .errors import StatusError, not_found
from .store import Store

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, CLOSE = 0, 1, 2, 3, 255
MAPPED = ("work", "outputs", "steps")
_MAPPED_PATH = re.compile(r"(?<![\w.~/-])/(" + "|".join(MAPPED) + r")(?=/|$|[^\w.-])")
CHUNK = 32 * 1024


def pod_root(pods_dir: Path, namespace: str, name: str) -> Path:
    return pods_dir / namespace / name


def make_root(pods_dir: Path, namespace: str, name: str) -> Path:
    root = pod_root(pods_dir, namespace, name)
    for mapped in MAPPED:
        (root / mapped).mkdir(parents=True, exist_ok=True)
    return root


def translate(argument: str, root: Path) -> str:
    return _MAPPED_PATH.sub(lambda match: f"{root}/{match.group(1)}", argument)


def exit_status(returncode: int) -> dict:
    code = 128 - returncode if returncode < 0 else returncode
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: exit status {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def _container(pod: dict, wanted: str | None) -> dict:
    name = pod["metadata"]["name"]
    containers = (pod.get("spec") or {}).get("containers") or []
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        raise StatusError(
            400,
            "BadRequest",
            f"cannot exec into a container in a completed pod; current phase is {phase}",
        )
    if not (pod.get("spec") or {}).get("nodeName") or phase != "Running":
        raise StatusError(400, "BadRequest", f"pod {name} does not have a host assigned")
    names = [container.get("name") for container in containers]
    if wanted is None:
        if len(containers) != 1:
            raise StatusError(
                400,
                "BadRequest",
                f"a container name must be specified for pod {name}, choose one of: "
                f"[{' '.join(str(n) for n in names)}]",
            )
        return containers[0]
    for container in containers:
        if container.get("name") == wanted:
            return container
    raise StatusError(400, "BadRequest", f"container {wanted} is not valid for pod {name}")


def _environment(pod: dict, container: dict, root: Path) -> dict[str, str]:
    env = dict(os.environ)
    fields = {
        "metadata.name": pod["metadata"]["name"],
        "metadata.namespace": pod["metadata"].get("namespace", ""),
        "metadata.uid": pod["metadata"]["uid"],
        "status.podIP": (pod.get("status") or {}).get("podIP", ""),
        "spec.nodeName": (pod.get("spec") or {}).get("nodeName", ""),
    }
    for variable in container.get("env") or []:
        if "value" in variable:
            env[variable["name"]] = str(variable["value"])
        field_path = ((variable.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        if field_path in fields:
            env[variable["name"]] = fields[field_path]
    env.update(HOME=str(root), ROOT=str(root))
    return env


async def serve(
    store: Store, pods_dir: Path, request: aiohttp.web.BaseRequest, namespace: str, name: str
) -> aiohttp.web.StreamResponse:
    if request.method not in ("GET", "POST"):
        return aiohttp.web.json_response(
            StatusError(405, "MethodNotAllowed", "exec is GET or POST").status(), status=405
        )
    try:
        pod = store.find("", "pods", namespace, name)
        if pod is None:
            raise not_found("", "pods", name)
        container = _container(pod, request.query.get("container"))
        command = request.query.getall("command", [])
        if not command:
            raise StatusError(400, "BadRequest", "you must specify at least 1 command")
    except StatusError as error:
        return aiohttp.web.json_response(error.status(), status=error.code)
    root = make_root(pods_dir, namespace, name)
    socket = aiohttp.web.WebSocketResponse(protocols=PROTOCOLS, max_msg_size=0)
    await socket.prepare(request)  # type: ignore[arg-type]
    v5 = socket.ws_protocol == PROTOCOLS[0]
    want_stdin = request.query.get("stdin") in ("true", "1")
    argv = [translate(argument, root) for argument in command]
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if want_stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=root,
            env=_environment(pod, container, root),
            start_new_session=True,
        )
    except OSError as exc:
        message = (
            "OCI runtime exec failed: exec failed: unable to start container process: "
            f'exec: "{command[0]}": {exc.strerror}: unknown'
        )
        failure = {
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": "InternalError",
            "details": {"causes": [{"message": message}]},
            "code": 500,
        }
        await socket.send_bytes(bytes([ERROR]) + json.dumps(failure).encode())
        await socket.close()
        return socket

    async def pump(stream: asyncio.StreamReader | None, channel: int) -> None:
        assert stream is not None
        while chunk := await stream.read(CHUNK):
            await socket.send_bytes(bytes([channel]) + chunk)

    async def feed() -> None:
        """Client frames to stdin; returns when the client closes the websocket."""
        async for message in socket:
            if message.type == aiohttp.WSMsgType.BINARY:
                data = message.data
            elif message.type == aiohttp.WSMsgType.TEXT:
                data = message.data.encode("latin-1", "replace")
            else:
                break
            if not data:
                continue
            if v5 and data[0] == CLOSE:
                if data[1:2] == bytes([STDIN]) and process.stdin is not None:
                    with contextlib.suppress(OSError):
                        process.stdin.close()
                continue
            if data[0] == STDIN and process.stdin is not None and not process.stdin.is_closing():
                with contextlib.suppress(OSError):
                    process.stdin.write(data[1:])
                    await process.stdin.drain()

    outputs = asyncio.gather(pump(process.stdout, STDOUT), pump(process.stderr, STDERR))
    client = asyncio.ensure_future(feed())
    finished = asyncio.ensure_future(asyncio.shield(outputs))
    try:
        done, _ = await asyncio.wait({client, finished}, return_when=asyncio.FIRST_COMPLETED)
        if finished in done:
            returncode = await process.wait()
            await socket.send_bytes(bytes([ERROR]) + json.dumps(exit_status(returncode)).encode())
            await socket.close()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        if process.returncode is None:  # the client left first: the command dies with it
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
        client.cancel()
        outputs.cancel()
        with contextlib.suppress(BaseException):
            await outputs
        with contextlib.suppress(BaseException):
            await client
    return socket
