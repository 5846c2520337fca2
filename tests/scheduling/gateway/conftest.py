"""The function gateway as it runs: the portal's ASGI application (``portal.asgi``) under
uvicorn on a free port, a real FunctionRuntime gRPC server on a unix socket as the Run's
runtimed, and Runs, Runtime Pods, users, tokens and RoleBindings made through the real models
and API (transactional tests: the server's threads read what the test wrote)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
import uvicorn
from rest_framework.authtoken.models import Token

from portal.auth.default_roles import ensure_default_cluster_roles
from portal.machinery import watch
from portal.models import Namespace
from scheduling import run_status
from scheduling.gateway import access, forward
from scheduling.gateway.ownership import ownership
from scheduling.models import Run, RuntimePod
from tests.helpers.function_runtime import FunctionServer, start_function_server
from tests.helpers.rbac import bind_role
from tests.helpers.runs import run_manifest, runs_url
from tests.portal.auth import conftest as cluster_access

TEAM_A, TEAM_B = "team-a", "team-b"

# the Kubernetes emulator with scripted TokenReviews and SubjectAccessReviews, as the
# authorization suites use them
kube_emulator = cluster_access.kube_emulator
access_reviews = cluster_access.access_reviews
sar_backend = cluster_access.sar_backend
token_reviews = cluster_access.token_reviews
SOURCE = {"inline": "def invoke(event):\n    return event\n", "inlinePath": "app.py"}


def function_manifest(name: str) -> dict:
    return run_manifest(
        name, runtime="python", source=SOURCE, mode={"function": {"handler": "app.invoke"}}
    )


@dataclass(frozen=True)
class FunctionRun:
    namespace: str
    name: str
    uid: str

    @property
    def path(self) -> str:
        return f"/v1/namespaces/{self.namespace}/runs/{self.name}/{self.uid}/invoke"


def user_subject(name: str) -> list[dict]:
    return [{"kind": "User", "name": name, "apiGroup": "rbac.authorization.k8s.io"}]


def create_run(admin_api, namespace: str, name: str, manifest: dict | None = None) -> Run:
    response = admin_api.post(
        runs_url(namespace), manifest or function_manifest(name), format="json"
    )
    assert response.status_code == 201, response.json()
    return Run.objects.get(namespace=namespace, name=name)


def set_status(run: Run, **status) -> None:
    """Write the Run's status as the control plane does (recorded: the watch hub sees it)."""
    run.refresh_from_db()
    assert run_status.write(run, {**(run.status or {}), **status})


def make_ready(run: Run, pod: RuntimePod, attempt: int = 2) -> FunctionRun:
    set_status(
        run, phase="Ready", assignedPod=pod.name, assignedPodUID=str(pod.uid), attempt=attempt
    )
    return FunctionRun(run.namespace, run.name, str(run.uid))


@pytest.fixture(autouse=True)
def fresh_gateway():
    """Each test starts with the gateway knowing nothing (tests roll the database back)."""
    access.clear()
    ownership.clear()
    forward.reset()
    yield
    access.clear()
    ownership.clear()


@pytest.fixture
def hub() -> Iterator[watch.Hub]:
    """The watch hub the gateway's ownership cache listens to: a process's own, polling in the
    background as in a web process, ended with the test (it holds a database connection)."""
    source = watch.Hub()
    ownership.listen(source)
    yield source
    ownership.stop()
    source.stop()
    if source._thread is not None:
        source._thread.join(timeout=10)


@pytest.fixture
def function_server() -> Iterator[FunctionServer]:
    server = start_function_server()
    yield server
    server.stop()


def asgi_application():
    """``portal.asgi.application``, imported without leaving its ``KRUNTIMES_ASGI`` in this
    process's environment: the processes later tests start would inherit it and configure
    themselves as web processes (a pooled database)."""
    had = "KRUNTIMES_ASGI" in os.environ
    from portal.asgi import application

    if not had:
        os.environ.pop("KRUNTIMES_ASGI", None)
    return application


@pytest.fixture
def gateway(hub) -> Iterator[str]:
    """``portal.asgi.application`` under uvicorn in this process; its base URL."""
    application = asgi_application()

    config = uvicorn.Config(application, host="127.0.0.1", port=0, log_level="error")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn never started"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@dataclass
class World:
    """Two namespaces; alice may edit team-a, bob may view team-a; a Ready function Run in
    each namespace on a pod served by ``server``."""

    client: httpx.Client
    server: FunctionServer
    pod: RuntimePod
    run: FunctionRun  # in team-a
    other: FunctionRun  # in team-b
    admin: str  # tokens
    alice: str
    bob: str

    def invoke(
        self,
        run: FunctionRun | None = None,
        body: bytes = b'{"x": 1}',
        token: str | None = None,
        headers: dict[str, str] | None = None,
        path: str | None = None,
        method: str = "POST",
        params: dict | None = None,
    ) -> httpx.Response:
        sent = dict(headers or {})
        token = self.alice if token is None else token
        if token:
            sent["Authorization"] = f"Bearer {token}"
        return self.client.request(
            method, path or (run or self.run).path, content=body, headers=sent, params=params
        )


@pytest.fixture
def world(gateway, function_server, admin_user, admin_api, user, django_user_model):
    ensure_default_cluster_roles()  # a transactional test's flush removed the migrated ones
    for name in ("default", TEAM_A, TEAM_B):
        Namespace.objects.get_or_create(name=name, defaults={"spec": {"finalizers": []}})
    bob = django_user_model.objects.create_user("bob", "bob@example.com", "pw")
    bind_role(admin_api, "alice-edit", "ClusterRole", "edit", namespace=TEAM_A)
    bind_role(
        admin_api, "bob-view", "ClusterRole", "view", subjects=user_subject("bob"), namespace=TEAM_A
    )
    pods = {
        namespace: RuntimePod.objects.create(
            namespace=namespace,
            runtime="python",
            name="python-0",
            phase="Running",
            ready=True,
            dataplane_address=function_server.address,
        )
        for namespace in (TEAM_A, TEAM_B)
    }
    run = make_ready(create_run(admin_api, TEAM_A, "fn"), pods[TEAM_A])
    other = make_ready(create_run(admin_api, TEAM_B, "fn"), pods[TEAM_B])
    tokens = [Token.objects.get_or_create(user=u)[0].key for u in (admin_user, user, bob)]
    with httpx.Client(base_url=gateway, timeout=30) as client:
        yield World(client, function_server, pods[TEAM_A], run, other, *tokens)
