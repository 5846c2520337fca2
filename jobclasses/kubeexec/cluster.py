"""Every call an execution makes to the cluster, in one small interface with two sides:
``ApiCluster`` makes them through the official ``kubernetes`` client (each with a
``_request_timeout``), ``DryRunCluster`` prints them instead (``--dry-run``) and answers as a
cluster that does what it is asked would.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from .manifest import CONTAINER, EXECUTION_LABEL

REQUEST_TIMEOUT_SECONDS = 30.0
POLL_SECONDS = 0.2
MAX_COPY_BYTES = 256 * 1024 * 1024  # an outputs archive larger than this fails the copy

Stop = Callable[[], bool]  # True: stop now (cancel, timeout)


class ClusterError(Exception):
    """A call failed; the message says which and why."""


@dataclass(frozen=True)
class ExecResult:
    exit_code: int | None  # None: the exec was stopped, or its status could not be read
    stopped: bool = False
    output: bytes = b""  # stdout, when the caller asked to keep it


@dataclass(frozen=True)
class Call:
    """One call, as the dry run prints it."""

    verb: str
    what: str
    detail: dict[str, Any] = field(default_factory=dict)


class Cluster(Protocol):
    def list_jobs(self, namespace: str, selector: str) -> list[dict[str, Any]]: ...

    def create(self, manifest: dict[str, Any]) -> bool:
        """True: created; False: it exists already (409)."""
        ...

    def delete(self, kind: str, namespace: str, name: str) -> None: ...

    def read_job(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The batch Job (None: it is gone)."""
        ...

    def annotate_job(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        """Merge ``annotations`` into the batch Job's (ClusterError if it is gone)."""
        ...

    def wait_pod_ready(self, namespace: str, execution_id: str, stop: Stop, timeout: float) -> str:
        """The name of the execution's pod once it is Ready (ClusterError on timeout)."""
        ...

    def exec(
        self,
        namespace: str,
        pod: str,
        argv: list[str],
        *,
        stdin: bytes | None,
        output: Callable[[bytes], None] | None,
        stop: Stop,
        keep_stdout: bool = False,
    ) -> ExecResult: ...


def exit_code_of(status: Any) -> int | None:
    """The exit code in an exec's error-channel Status (Success is 0)."""
    if not isinstance(status, dict):
        return None
    if status.get("status") == "Success":
        return 0
    for cause in (status.get("details") or {}).get("causes") or []:
        if cause.get("reason") == "ExitCode":
            try:
                return int(cause.get("message"))
            except (TypeError, ValueError):
                return None
    return None


def _labels_match(obj: dict[str, Any], selector: str) -> bool:
    """Client-side check of an equality selector (a server that ignored it stays correct)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


def pod_ended(pod: dict[str, Any]) -> str:
    """Why a finished pod ended: its phase, the container's exit code, reason and
    termination message (the kubelet's last word on it)."""
    status = pod.get("status") or {}
    said = []
    for container in status.get("containerStatuses") or []:
        ended = (container.get("state") or {}).get("terminated") or {}
        if ended:
            said.append(
                f"container {container.get('name')} exited {ended.get('exitCode')}"
                + (f" ({ended['reason']})" if ended.get("reason") else "")
                + (f": {ended['message'].strip()}" if ended.get("message") else "")
            )
    name = (pod.get("metadata") or {}).get("name")
    return f"pod {name} ended ({status.get('phase')})" + "".join(f"; {s}" for s in said)


def _pod_ready(pod: dict[str, Any]) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


class ApiCluster:
    """The calls through the official client, each bounded by ``request_timeout``."""

    def __init__(self, api_client: Any, request_timeout: float = REQUEST_TIMEOUT_SECONDS) -> None:
        from kubernetes import client

        self.api_client = api_client
        self.timeout = request_timeout
        self.batch = client.BatchV1Api(api_client)
        self.core = client.CoreV1Api(api_client)

    def _sanitized(self, obj: Any) -> dict[str, Any]:
        return self.api_client.sanitize_for_serialization(obj)

    def list_jobs(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        found = self.batch.list_namespaced_job(
            namespace, label_selector=selector, _request_timeout=self.timeout
        )
        items = [self._sanitized(item) for item in found.items or []]
        return [item for item in items if _labels_match(item, selector)]

    def create(self, manifest: dict[str, Any]) -> bool:
        from kubernetes.client.rest import ApiException

        namespace = manifest["metadata"]["namespace"]
        try:
            if manifest["kind"] == "Job":
                self.batch.create_namespaced_job(namespace, manifest, _request_timeout=self.timeout)
            else:
                self.core.create_namespaced_secret(
                    namespace, manifest, _request_timeout=self.timeout
                )
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        return True

    def delete(self, kind: str, namespace: str, name: str) -> None:
        from kubernetes.client.rest import ApiException

        try:
            if kind == "Job":
                self.batch.delete_namespaced_job(
                    name,
                    namespace,
                    propagation_policy="Background",
                    _request_timeout=self.timeout,
                )
            else:
                self.core.delete_namespaced_secret(name, namespace, _request_timeout=self.timeout)
        except ApiException as exc:
            if exc.status != 404:
                raise

    def read_job(self, namespace: str, name: str) -> dict[str, Any] | None:
        from kubernetes.client.rest import ApiException

        try:
            job = self.batch.read_namespaced_job(name, namespace, _request_timeout=self.timeout)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return self._sanitized(job)

    def annotate_job(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        from kubernetes.client.rest import ApiException

        try:
            self.batch.patch_namespaced_job(
                name,
                namespace,
                {"metadata": {"annotations": annotations}},
                _request_timeout=self.timeout,
            )
        except ApiException as exc:
            if exc.status == 404:
                raise ClusterError(f"batch Job {namespace}/{name} is gone") from exc
            raise

    def wait_pod_ready(self, namespace: str, execution_id: str, stop: Stop, timeout: float) -> str:
        selector = f"{EXECUTION_LABEL}={execution_id}"
        deadline = time.monotonic() + timeout
        while True:
            pods = self.core.list_namespaced_pod(
                namespace, label_selector=selector, _request_timeout=self.timeout
            )
            for pod in (self._sanitized(item) for item in pods.items or []):
                if not _labels_match(pod, selector):
                    continue
                phase = (pod.get("status") or {}).get("phase")
                if phase in ("Failed", "Succeeded"):
                    raise ClusterError(pod_ended(pod))
                if _pod_ready(pod):
                    return str(pod["metadata"]["name"])
            if stop():
                raise ClusterError("stopped while waiting for the pod")
            if time.monotonic() >= deadline:
                raise ClusterError(f"the pod was not Ready within {timeout:g}s")
            time.sleep(POLL_SECONDS)

    def exec(
        self,
        namespace: str,
        pod: str,
        argv: list[str],
        *,
        stdin: bytes | None,
        output: Callable[[bytes], None] | None,
        stop: Stop,
        keep_stdout: bool = False,
    ) -> ExecResult:
        import websocket
        from kubernetes.stream import stream
        from kubernetes.stream.ws_client import ERROR_CHANNEL, V5_CHANNEL_PROTOCOL

        websocket.setdefaulttimeout(self.timeout)  # the connect: the client passes none
        ws = stream(
            self.core.connect_get_namespaced_pod_exec,
            pod,
            namespace,
            command=argv,
            container=CONTAINER,
            stdin=stdin is not None,
            stdout=True,
            stderr=True,
            tty=False,
            binary=True,
            _preload_content=False,
            _request_timeout=self.timeout,
        )
        kept = bytearray()
        errors = bytearray()
        try:
            if stdin is not None:
                for start in range(0, len(stdin), 64 * 1024):
                    ws.write_stdin(stdin[start : start + 64 * 1024])
                if ws.subprotocol == V5_CHANNEL_PROTOCOL:
                    ws.close_channel(0)
            while ws.is_open():
                ws.update(timeout=POLL_SECONDS)
                out, err = ws.read_channel(1), ws.read_channel(2)
                if out:
                    if keep_stdout:
                        kept += out
                        if len(kept) > MAX_COPY_BYTES:
                            raise ClusterError(f"more than {MAX_COPY_BYTES} bytes came back")
                    elif output is not None:
                        output(out)
                if err and output is not None:
                    output(err)
                errors += ws.read_channel(ERROR_CHANNEL) or b""
                if stop():
                    return ExecResult(None, stopped=True)
            errors += ws.read_channel(ERROR_CHANNEL) or b""
            for channel in (1, 2):
                rest = ws.read_channel(channel)
                if rest and channel == 1 and keep_stdout:
                    kept += rest
                elif rest and output is not None:
                    output(rest)
        finally:
            ws.close()
        try:
            status = json.loads(bytes(errors)) if errors else None
        except ValueError:
            status = None
        return ExecResult(exit_code_of(status), output=bytes(kept))

    def runtime_class_exists(self, name: str) -> bool:
        from kubernetes import client
        from kubernetes.client.rest import ApiException

        try:
            client.NodeV1Api(self.api_client).read_runtime_class(
                name, _request_timeout=self.timeout
            )
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def list_runtime_classes(self) -> None:
        """A cheap cluster-scoped read: whether the API answers at all."""
        from kubernetes import client

        client.NodeV1Api(self.api_client).list_runtime_class(limit=1, _request_timeout=self.timeout)

    def service_account_exists(self, namespace: str, name: str) -> bool:
        from kubernetes.client.rest import ApiException

        try:
            self.core.read_namespaced_service_account(
                name, namespace, _request_timeout=self.timeout
            )
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True


class DryRunCluster:
    """Prints every call instead of making it, answering as an obliging cluster would."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.calls: list[Call] = []

    def _say(self, verb: str, what: str, **detail: Any) -> None:
        self.calls.append(Call(verb, what, detail))
        extra = "".join(f" {key}={json.dumps(value)}" for key, value in detail.items())
        self.out.write(f"dry-run: {verb} {what}{extra}\n")
        self.out.flush()

    def list_jobs(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        self._say("list", f"batch/v1 jobs -n {namespace}", labelSelector=selector)
        return []

    def create(self, manifest: dict[str, Any]) -> bool:
        shown = dict(manifest)
        if "stringData" in shown:
            shown["stringData"] = {key: "<redacted>" for key in shown["stringData"]}
        meta = manifest["metadata"]
        self._say(
            "create",
            f"{manifest['apiVersion']} {manifest['kind']} {meta['name']} -n {meta['namespace']}",
        )
        self.out.write(json.dumps(shown, indent=2, sort_keys=True) + "\n")
        return True

    def delete(self, kind: str, namespace: str, name: str) -> None:
        group = "batch/v1" if kind == "Job" else "v1"
        detail = {"propagationPolicy": "Background"} if kind == "Job" else {}
        self._say("delete", f"{group} {kind} {name} -n {namespace}", **detail)

    def read_job(self, namespace: str, name: str) -> dict[str, Any] | None:
        self._say("get", f"batch/v1 Job {name} -n {namespace}")
        return None

    def annotate_job(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        self._say("patch", f"batch/v1 Job {name} -n {namespace}", annotations=annotations)

    def wait_pod_ready(self, namespace: str, execution_id: str, stop: Stop, timeout: float) -> str:
        self._say(
            "wait",
            f"v1 pods -n {namespace} Ready",
            labelSelector=f"{EXECUTION_LABEL}={execution_id}",
            timeoutSeconds=timeout,
        )
        return "<pod>"

    def exec(
        self,
        namespace: str,
        pod: str,
        argv: list[str],
        *,
        stdin: bytes | None,
        output: Callable[[bytes], None] | None,
        stop: Stop,
        keep_stdout: bool = False,
    ) -> ExecResult:
        detail: dict[str, Any] = {"argv": argv}
        if stdin is not None:
            detail["stdinBytes"] = len(stdin)
        self._say("exec", f"pod {pod} -n {namespace} -c {CONTAINER}", **detail)
        return ExecResult(0)
