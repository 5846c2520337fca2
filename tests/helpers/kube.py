"""A Kubernetes API server for tests: kmock's KubernetesEmulator with the API's semantics,
served over real HTTP from a background thread.

Tests drive the code under test through the official ``kubernetes`` client, pointed at
``EmulatorServer.url``. kmock serves discovery, ``/version`` and the scripted routes
(``emulator["post /apis/..."] << answer``); review kinds (SubjectAccessReview,
TokenReview, ...) are answers only, never stored. Every other resource path is served
by ``tests.helpers.emulator``: the store (metadata, one global resourceVersion, 409s,
selectors, watch resume and 410 Expired; see ``emulator/store.py`` and ``emulator/api.py``).

Public hooks, callable from the test's thread:

- ``server.url``: the API server's address (``kubernetes.client.Configuration().host``).
- ``server.store`` (``emulator.store``): ``get/find/select/create/replace/patch/delete``
  straight on the objects (the same validation and events as over HTTP).
- ``server.compact()``: forget the watch history, so a watch resuming from any earlier
  resourceVersion gets 410 Expired; returns the version watches may resume from.
- ``server.end_watches()``: close every open watch (clients must re-watch).
- ``server.workloads`` (``emulator/workloads.py``): Deployments -> ReplicaSets -> Pods
  and Jobs -> Pods, with a kubelet making pods Running/Ready after
  ``server.workloads.ready_delay`` seconds (default 0). Hooks: ``delete_pod(ns, name)``
  (out of band: the controller replaces it under a new name and uid), ``fail_pod(ns,
  name, exit_code)``, ``succeed_pod(ns, name)``, ``set_pod_ready(ns, name, ready)``,
  ``never_ready(ns, name_prefix)`` (pods created later run but stay Ready=False),
  ``pods(ns, label_selector)``.
- The namespaces ``default``, ``kube-system``, ``kube-public``, ``kube-node-lease`` exist;
  creating into any other namespace needs ``POST /api/v1/namespaces`` first (404 otherwise).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import warnings

import aiohttp.web
import attrs
import kmock

from tests.helpers.emulator import api, selectors
from tests.helpers.emulator.store import Store
from tests.helpers.emulator.workloads import Workloads

START_TIMEOUT_SECONDS = 10.0
SERVER_VERSION = {
    "major": "1",
    "minor": "33",
    "gitVersion": "v1.33.0",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-04-23T00:00:00Z",
    "goVersion": "go1.24.2",
    "compiler": "gc",
    "platform": "linux/amd64",
}
SUBJECT_ACCESS_REVIEWS = "post /apis/authorization.k8s.io/v1/subjectaccessreviews"
# A held answer waits at most this long (in 10 ms steps) even if nobody releases it.
MAX_HOLD_SECONDS = 5.0
# Kubernetes never persists these; every POST is a fresh question.
REVIEW_RESOURCES = frozenset(
    {
        "subjectaccessreviews",
        "selfsubjectaccessreviews",
        "localsubjectaccessreviews",
        "selfsubjectrulesreviews",
        "tokenreviews",
        "selfsubjectreviews",
    }
)


@attrs.define(kw_only=True)
class Emulator(kmock.KubernetesEmulator):
    """Resource paths served by the store; review kinds and the rest by kmock's routes."""

    store: Store = attrs.field(factory=Store)
    workloads: Workloads = attrs.field(
        default=attrs.Factory(lambda self: Workloads(self.store), takes_self=True)
    )

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        if raw_request.path.rstrip("/") == "/version":
            return aiohttp.web.json_response(SERVER_VERSION)
        where = api.route(raw_request.path)
        if where is None or where.plural in REVIEW_RESOURCES:
            return await super().__call__(raw_request)
        return await api.serve(self.store, raw_request, where)

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        resource = request.resource
        if resource is not None and resource.plural in REVIEW_RESOURCES:
            return await kmock.KubernetesScaffold._handle(self, request)
        return await super()._handle(request)


class EmulatorServer:
    """Start/stop an ``Emulator`` on a free localhost port with its own event loop thread."""

    def __init__(self, emulator: Emulator | None = None) -> None:
        self.emulator = emulator if emulator is not None else Emulator()
        with warnings.catch_warnings():  # kmock 0.8 reads its bundle with a deprecated API
            warnings.simplefilter("ignore", DeprecationWarning)
            self.emulator.resources.load_bundled()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kmock", daemon=True)
        self._stack: contextlib.AsyncExitStack | None = None
        self._server: kmock.Server | None = None

    @property
    def store(self) -> Store:
        return self.emulator.store

    def compact(self) -> int:
        return self.emulator.store.compact()

    def end_watches(self) -> None:
        self.emulator.store.end_watches()

    @property
    def workloads(self) -> Workloads:
        return self.emulator.workloads

    def delete_pod(self, namespace: str, name: str) -> dict:
        """A pod deleted out of band (its controller replaces it under a new name)."""
        return self.emulator.store.delete("", "pods", namespace, name)

    def fail_pod(self, namespace: str, name: str, exit_code: int = 1) -> dict | None:
        return self.emulator.workloads.fail_pod(namespace, name, exit_code)

    def succeed_pod(self, namespace: str, name: str) -> dict | None:
        return self.emulator.workloads.succeed_pod(namespace, name)

    def set_pod_ready(self, namespace: str, name: str, ready: bool = True) -> dict | None:
        return self.emulator.workloads.set_ready(namespace, name, ready)

    def never_ready(self, namespace: str, name_prefix: str = "") -> None:
        self.emulator.workloads.never_ready(namespace, name_prefix)

    def pods(self, namespace: str, label_selector: str = "") -> list[dict]:
        return self.emulator.store.select(
            "", "pods", namespace, selectors.label_selector(label_selector)
        )

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the emulator is not running")
        return f"http://{self._server.host}:{self._server.port}"

    def start(self) -> EmulatorServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._enter(), self._loop).result(START_TIMEOUT_SECONDS)
        return self

    def stop(self) -> None:
        try:
            if self._stack is not None:
                asyncio.run_coroutine_threadsafe(self._stack.aclose(), self._loop).result(
                    START_TIMEOUT_SECONDS
                )
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(START_TIMEOUT_SECONDS)
            if not self._thread.is_alive():
                self._loop.close()
            self._stack = self._server = None

    async def _enter(self) -> None:
        stack = contextlib.AsyncExitStack()
        await stack.enter_async_context(self.emulator)
        # port=None: the OS picks a free port, so parallel runs never collide
        self._server = await stack.enter_async_context(
            kmock.Server(self.emulator, host="127.0.0.1", port=None)
        )
        self._stack = stack

    def __enter__(self) -> EmulatorServer:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()


def access_review_answer(
    review: dict, *, allowed: bool, denied: bool = False, reason: str = ""
) -> dict:
    """What the API server returns for a posted access review: the spec echoed, plus status."""
    status: dict = {"allowed": allowed}
    if denied:
        status["denied"] = True
    if reason:
        status["reason"] = reason
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "metadata": {},
        **{k: v for k, v in review.items() if k == "spec"},
        "status": status,
    }


class ScriptedAccessReviews:
    """A route for SubjectAccessReviews: answers as scripted and records each posted body.

    ``allow``/``deny`` set the answer; ``fail(code)`` answers a Status error; ``hold()`` keeps
    every answer back until ``release()`` (bounded by ``MAX_HOLD_SECONDS``) to test timeouts.
    """

    def __init__(self) -> None:
        self.requests: list[kmock.Request] = []
        self._answer: dict = {"allowed": True}
        self._error_code: int | None = None
        self._held = threading.Event()
        self._released = threading.Event()

    @property
    def bodies(self) -> list[dict]:
        return [request.data for request in self.requests]

    def route(self, emulator: kmock.KubernetesEmulator) -> ScriptedAccessReviews:
        emulator[SUBJECT_ACCESS_REVIEWS] << self
        return self

    def allow(self, reason: str = "") -> None:
        self._answer, self._error_code = {"allowed": True, "reason": reason}, None

    def deny(self, reason: str = "", *, no_opinion: bool = False) -> None:
        self._answer = {"allowed": False, "denied": not no_opinion, "reason": reason}
        self._error_code = None

    def fail(self, code: int = 500) -> None:
        self._error_code = code

    def hold(self) -> None:
        self._held.set()

    def release(self) -> None:
        self._released.set()

    async def __call__(self, request: kmock.Request) -> dict:
        self.requests.append(request)
        if self._held.is_set():
            deadline = time.monotonic() + MAX_HOLD_SECONDS
            while not self._released.is_set() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
        if self._error_code is not None:
            raise kmock.KubernetesError(
                status=self._error_code,
                reason="InternalError",
                message="the authorizer is unavailable",
            )
        return access_review_answer(request.data, **self._answer)
