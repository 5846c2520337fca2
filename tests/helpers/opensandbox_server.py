"""A local OpenSandbox stand-in: the lifecycle API and each sandbox's execd over real HTTP
(aiohttp in a thread, a free port on 127.0.0.1), so the adapter's ``opensandbox`` SDK calls run
unchanged.

The contract cannot drift: the lifecycle routes are the ``opensandbox-server`` package's own
(read from its route decorators, without importing the module, which would start a backend),
requests are parsed and responses built with its pydantic models (``CreateSandboxRequest``,
``Sandbox``, ``ListSandboxesResponse``, ``Endpoint``, ``ErrorResponse``) and its extension
validation; execd's routes and events are the SDK's generated execd client's (``/command``,
``/files/upload``, ``/files/download``, ``/ping``; ``ServerStreamEvent``), since the server
package has no execd. Authentication is the server's: ``OPEN-SANDBOX-API-KEY`` must match
``api_key`` (change it to rotate), ``/health`` is exempt (set ``healthy`` to fail it).

Commands run for real (``sh -c``) in a per-sandbox temporary directory standing for the
sandbox's filesystem root: a sandbox path ``/x/y`` is ``<dir>/x/y`` for the file API and for a
command's working directory (a command's own absolute paths are the host's).
"""

from __future__ import annotations

import ast
import asyncio
import json
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import opensandbox_server
from aiohttp import web
from opensandbox.api.execd.models import FileInfo, ServerStreamEvent
from opensandbox_server.api.schema import (
    CreateSandboxRequest,
    CreateSandboxResponse,
    Endpoint,
    ErrorResponse,
    ListSandboxesResponse,
    PaginationInfo,
    Sandbox,
    SandboxStatus,
)
from opensandbox_server.middleware.auth import AuthMiddleware

API_KEY_HEADER = "OPEN-SANDBOX-API-KEY"
_PACKAGE = Path(opensandbox_server.__file__).parent


def server_routes(module: str = "api/lifecycle.py") -> set[tuple[str, str]]:
    """(method, path) of every ``@router.<method>("<path>")`` in the server package's module."""
    tree = ast.parse((_PACKAGE / module).read_text(encoding="utf-8"))
    routes = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for deco in node.decorator_list:
                if (
                    isinstance(deco, ast.Call)
                    and isinstance(deco.func, ast.Attribute)
                    and isinstance(deco.func.value, ast.Name)
                    and deco.func.value.id in ("router", "app")
                    and deco.args
                    and isinstance(deco.args[0], ast.Constant)
                ):
                    routes.add((deco.func.attr.upper(), deco.args[0].value))
    return routes


LIFECYCLE = server_routes()
ROOT_ROUTES = server_routes("main.py")
API_PREFIX = "/v1"  # main.py includes the lifecycle router under /v1 (and at the root)


def _route(method: str, path: str, routes: set[tuple[str, str]] = LIFECYCLE) -> str:
    """``path``, once the server package is seen to serve it (aiohttp's ``{name}`` placeholders
    are FastAPI's)."""
    assert (method, path) in routes, f"the server package has no {method} {path}"
    return path


def _json(model: Any, status: int = 200) -> web.Response:
    return web.Response(
        status=status,
        text=model.model_dump_json(by_alias=True, exclude_none=True),
        content_type="application/json",
    )


def _error(status: int, code: str, message: str) -> web.Response:
    return _json(ErrorResponse(code=code, message=message), status)


@dataclass
class StandInSandbox:
    id: str
    request: CreateSandboxRequest
    root: Path
    created_at: datetime
    state: str = "Running"
    commands: dict[str, subprocess.Popen] = field(default_factory=dict)

    def path(self, sandbox_path: str) -> Path:
        target = (self.root / sandbox_path.lstrip("/")).resolve()
        if not target.is_relative_to(self.root.resolve()):
            raise web.HTTPBadRequest(text="path leaves the sandbox")
        return target

    def model(self) -> Sandbox:
        return Sandbox(
            id=self.id,
            image=self.request.image,
            status=SandboxStatus(state=self.state),
            metadata=self.request.metadata,
            extensions=self.request.extensions,
            entrypoint=self.request.entrypoint,
            createdAt=self.created_at,
        )


class OpenSandboxStandIn:
    def __init__(self, api_key: str = "key-1") -> None:
        self.api_key = api_key
        self.healthy = True
        self.sandboxes: dict[str, StandInSandbox] = {}
        self.created: list[CreateSandboxRequest] = []
        self.deleted: list[str] = []
        self.commands: list[dict[str, Any]] = []  # (sandbox id, command) of each execd command
        self.refused_keys: list[str] = []
        self.hang_commands = False  # /command then sends its headers and nothing more
        self._dir = Path(tempfile.mkdtemp(prefix="opensandbox-standin-"))
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> OpenSandboxStandIn:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the OpenSandbox stand-in did not start")
        return self

    def stop(self) -> None:
        for sandbox in list(self.sandboxes.values()):
            self._terminate(sandbox)
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        shutil.rmtree(self._dir, ignore_errors=True)

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._runner = web.AppRunner(self._app())
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        self._loop.run_until_complete(site.start())
        ready.set()
        self._loop.run_forever()

    def _app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth])
        v1 = API_PREFIX
        app.router.add_get(_route("GET", "/health", ROOT_ROUTES), self.health)
        app.router.add_post(v1 + _route("POST", "/sandboxes"), self.create)
        app.router.add_get(v1 + _route("GET", "/sandboxes"), self.list)
        app.router.add_get(v1 + _route("GET", "/sandboxes/{sandbox_id}"), self.get)
        app.router.add_delete(v1 + _route("DELETE", "/sandboxes/{sandbox_id}"), self.delete)
        app.router.add_get(
            v1 + _route("GET", "/sandboxes/{sandbox_id}/endpoints/{port}"), self.endpoint
        )
        execd = "/execd/{sandbox_id}"
        app.router.add_get(execd + "/ping", self.ping)
        app.router.add_post(execd + "/command", self.run_command)
        app.router.add_delete(execd + "/command", self.interrupt)
        app.router.add_post(execd + "/files/upload", self.upload)
        app.router.add_get(execd + "/files/download", self.download)
        app.router.add_get(execd + "/files/search", self.search)
        return app

    @web.middleware
    async def _auth(self, request: web.Request, handler):
        exempt = any(request.path.startswith(p) for p in AuthMiddleware.EXEMPT_PATHS)
        if not exempt and not request.path.startswith("/execd/"):
            key = request.headers.get(API_KEY_HEADER)
            if key is None:
                return _error(401, "MISSING_API_KEY", f"Provide API key via {API_KEY_HEADER}")
            if key != self.api_key:
                self.refused_keys.append(key)
                return _error(401, "INVALID_API_KEY", "Invalid API key")
        return await handler(request)

    def _sandbox(self, request: web.Request) -> StandInSandbox:
        sandbox = self.sandboxes.get(request.match_info["sandbox_id"])
        if sandbox is None or sandbox.state != "Running":
            raise web.HTTPNotFound(
                text=ErrorResponse(
                    code="SANDBOX_NOT_FOUND", message="no such sandbox"
                ).model_dump_json(),
                content_type="application/json",
            )
        return sandbox

    async def health(self, request: web.Request) -> web.Response:
        if not self.healthy:
            return web.json_response({"status": "unhealthy"}, status=503)
        return web.json_response({"status": "healthy"})

    async def create(self, request: web.Request) -> web.Response:
        from fastapi import HTTPException
        from opensandbox_server.extensions import validate_extensions

        try:
            body = CreateSandboxRequest.model_validate(await request.json())
            validate_extensions(body.extensions)
        except HTTPException as exc:
            return web.json_response(exc.detail, status=exc.status_code)
        except ValueError as exc:
            return _error(400, "INVALID_REQUEST", str(exc))
        sandbox_id = uuid.uuid4().hex[:12]
        root = self._dir / sandbox_id
        root.mkdir()
        sandbox = StandInSandbox(sandbox_id, body, root, datetime.now(UTC))
        self.sandboxes[sandbox_id] = sandbox
        self.created.append(body)
        response = CreateSandboxResponse(
            id=sandbox_id,
            status=SandboxStatus(state="Running"),
            metadata=body.metadata,
            extensions=body.extensions,
            entrypoint=body.entrypoint,
            createdAt=sandbox.created_at,
        )
        return _json(response, 202)

    async def list(self, request: web.Request) -> web.Response:
        from urllib.parse import parse_qsl

        wanted = dict(parse_qsl(request.query.get("metadata", "")))
        states = request.query.getall("state", [])
        items = [
            s.model()
            for s in self.sandboxes.values()
            if all((s.request.metadata or {}).get(k) == v for k, v in wanted.items())
            and (not states or s.state in states)
        ]
        size = int(request.query.get("pageSize", 20))
        page = ListSandboxesResponse(
            items=items[:size],
            pagination=PaginationInfo(
                page=1,
                pageSize=size,
                totalItems=len(items),
                totalPages=1,
                hasNextPage=len(items) > size,
            ),
        )
        return _json(page)

    async def get(self, request: web.Request) -> web.Response:
        return _json(self._sandbox(request).model())

    async def delete(self, request: web.Request) -> web.Response:
        sandbox = self._sandbox(request)
        self._terminate(sandbox)
        self.deleted.append(sandbox.id)
        return web.Response(status=204)

    def _terminate(self, sandbox: StandInSandbox) -> None:
        sandbox.state = "Terminated"
        for process in sandbox.commands.values():
            if process.poll() is None:
                process.kill()
                process.wait(5)

    async def endpoint(self, request: web.Request) -> web.Response:
        sandbox = self._sandbox(request)
        return _json(Endpoint(endpoint=f"127.0.0.1:{self.port}/execd/{sandbox.id}"))

    # --- execd ---------------------------------------------------------------------------

    async def ping(self, request: web.Request) -> web.Response:
        self._sandbox(request)
        return web.Response(status=200)

    async def run_command(self, request: web.Request) -> web.StreamResponse:
        sandbox = self._sandbox(request)
        body = await request.json()
        command, cwd = body["command"], sandbox.path(body.get("cwd") or "/")
        cwd.mkdir(parents=True, exist_ok=True)
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(sandbox.root),
            "LANG": "C.UTF-8",
            **{k: v for k, v in (sandbox.request.env or {}).items() if v is not None},
        }
        process = subprocess.Popen(
            ["/bin/sh", "-c", command],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        execution_id = uuid.uuid4().hex
        sandbox.commands[execution_id] = process
        self.commands.append({"sandbox": sandbox.id, "command": command, "cwd": body.get("cwd")})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        while self.hang_commands:
            await asyncio.sleep(0.05)
        await self._event(response, type="init", text=execution_id)
        if not body.get("background"):
            output = await asyncio.get_running_loop().run_in_executor(None, process.communicate)
            await self._event(response, type="stdout", text=output[0].decode())
            if process.returncode:
                await self._event(
                    response,
                    type="error",
                    error={"ename": "CommandExecError", "evalue": str(process.returncode)},
                )
        await self._event(response, type="execution_complete", execution_time=0)
        await response.write_eof()
        return response

    async def _event(self, response: web.StreamResponse, **fields: Any) -> None:
        event = ServerStreamEvent.from_dict({"timestamp": int(time.time() * 1000), **fields})
        await response.write(f"data: {json.dumps(event.to_dict())}\n\n".encode())

    async def interrupt(self, request: web.Request) -> web.Response:
        sandbox = self._sandbox(request)
        process = sandbox.commands.get(request.query.get("id", ""))
        if process is None:
            return _error(404, "NOT_FOUND", "no such command")
        if process.poll() is None:
            process.kill()
        return web.Response(status=200)

    async def upload(self, request: web.Request) -> web.Response:
        sandbox = self._sandbox(request)
        reader = await request.multipart()
        metadata: dict[str, Any] | None = None
        while (part := await reader.next()) is not None:
            if part.name == "metadata":
                metadata = json.loads(await part.text())
                continue
            assert metadata is not None, "a file part comes after its metadata"
            target = sandbox.path(metadata["path"])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(await part.read())
            target.chmod(int(str(metadata.get("mode") or 644), 8))
            metadata = None
        return web.Response(status=200)

    async def download(self, request: web.Request) -> web.Response:
        sandbox = self._sandbox(request)
        target = sandbox.path(request.query["path"])
        if not target.is_file():
            return _error(404, "FILE_NOT_FOUND", f"{request.query['path']} not found")
        return web.Response(body=target.read_bytes(), content_type="application/octet-stream")

    async def search(self, request: web.Request) -> web.Response:
        sandbox = self._sandbox(request)
        base = sandbox.path(request.query["path"])
        if not base.is_dir():
            return _error(404, "FILE_NOT_FOUND", f"{request.query['path']} not found")
        pattern = request.query.get("pattern") or "*"
        found = []
        for path in sorted(base.rglob(pattern)):
            if path.is_file():
                stat = path.stat()
                found.append(
                    FileInfo(
                        path="/" + str(path.relative_to(sandbox.root)),
                        size=stat.st_size,
                        modified_at=datetime.fromtimestamp(stat.st_mtime, UTC),
                        created_at=datetime.fromtimestamp(stat.st_ctime, UTC),
                        owner="root",
                        group="root",
                        mode=int(oct(stat.st_mode & 0o777)[2:]),
                    ).to_dict()
                )
        return web.json_response(found)

    # --- what the tests look at ----------------------------------------------------------

    def live(self) -> list[StandInSandbox]:
        return [s for s in self.sandboxes.values() if s.state == "Running"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
