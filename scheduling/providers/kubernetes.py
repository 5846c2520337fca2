"""The ``kubernetes`` provider: each Runtime is a Deployment, each of its Pods a RuntimePod row.

Level-triggered, found by labels, never remembered: ``ensure_deployments`` compares every live
Runtime with the Deployments carrying the managed-by label (create, replace when the desired
hash or the replicas differ, delete those whose Runtime is gone); ``relist`` makes the rows
match a full list of the provider's Pods; ``watch`` follows Pod changes from the last
resourceVersion and relists when the API says that version is too old (410 Gone). Every call
has a request timeout; one object's error is logged and the sweep goes on.

Every control-worker replica runs one; with a ``LeaseLock`` (``leader``) only the replica
holding the Lease acts, one slice of work per renewal, and a replica that cannot renew
stops acting at once; a new term starts with a full relist.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import kubernetes
import urllib3
from django.conf import settings
from django.utils import timezone
from kubernetes.client.rest import ApiException

from portal import kube
from scheduling.models import runtimes_with_pods
from scheduling.providers import deployment, kube_pods
from scheduling.providers.leader import LeaseLock

log = logging.getLogger(__name__)
GONE = 410
CONFLICT = 409
NOT_FOUND = 404
# network trouble ends one watch; the next starts from the same resourceVersion
TRANSIENT = (urllib3.exceptions.HTTPError, OSError)


def runtimed_options() -> deployment.RuntimedOptions:
    return deployment.RuntimedOptions(
        image=settings.KRUNTIMES_RUNTIMED_IMAGE,
        broker_secret=settings.KRUNTIMES_RUNTIMED_BROKER_SECRET,
        broker_secret_key=settings.KRUNTIMES_RUNTIMED_BROKER_SECRET_KEY,
        broker_url=settings.KRUNTIMES_RUNTIMED_BROKER_URL,
        termination_grace_seconds=int(settings.KRUNTIMES_POD_TERMINATION_GRACE_SECONDS),
        extra_env={
            "KRUNTIME_ARTIFACT_MAX_BYTES": str(settings.KRUNTIMES_ARTIFACT_MAX_BYTES),
            "KRUNTIME_RUN_ARTIFACT_MAX_BYTES": str(settings.KRUNTIMES_RUN_ARTIFACT_MAX_BYTES),
        },
    )


@dataclass
class Sweep:
    created: int = 0
    updated: int = 0
    deleted: int = 0
    failed: int = 0


class KubernetesProvider:
    def __init__(
        self,
        api: kubernetes.client.ApiClient | None = None,
        *,
        request_timeout: float | None = None,
        watch_seconds: int | None = None,
    ) -> None:
        self.api = api if api is not None else kube.api_client()
        self.core = kubernetes.client.CoreV1Api(self.api)
        self.apps = kubernetes.client.AppsV1Api(self.api)
        self.timeout = request_timeout or settings.KRUNTIMES_KUBE_REQUEST_TIMEOUT_SECONDS
        self.watch_seconds = watch_seconds or settings.KRUNTIMES_KUBE_WATCH_SECONDS
        self.resource_version: str | None = None  # of the Pods, after the last list/event
        self.relists = 0
        self._watch: kubernetes.watch.Watch | None = None
        self.stopping = False

    # --- Deployments ------------------------------------------------------------------

    def runtimes(self) -> list[tuple[str, str, str, dict]]:
        rows = runtimes_with_pods().values_list("namespace", "name", "uid", "spec")
        return [(ns, name, str(uid), spec) for ns, name, uid, spec in rows.order_by("pk")]

    def existing(self) -> dict[tuple[str, str], dict]:
        selector = f"{deployment.MANAGED_BY_LABEL}={deployment.MANAGED_BY}"
        found = self._json(
            self.apps.list_deployment_for_all_namespaces(
                label_selector=selector, _request_timeout=self.timeout, _preload_content=False
            )
        )
        return {
            (d["metadata"]["namespace"], d["metadata"]["name"]): d for d in found.get("items") or []
        }

    def ensure_deployments(self) -> Sweep:
        """Every live Runtime's Deployment as its spec says; Deployments of gone ones deleted."""
        sweep = Sweep()
        existing, options, wanted = self.existing(), runtimed_options(), set()
        for namespace, name, uid, spec in self.runtimes():
            key = (namespace, deployment.deployment_name(name))
            wanted.add(key)
            try:
                manifest = deployment.deployment_manifest(namespace, name, uid, spec, options)
                self._ensure(manifest, existing.get(key), sweep)
            except Exception:  # noqa: BLE001 - one Runtime's error never stops the sweep
                sweep.failed += 1
                log.exception("could not ensure Deployment %s/%s", *key)
        for key in sorted(set(existing) - wanted):
            if (existing[key].get("metadata") or {}).get("deletionTimestamp"):
                continue  # already going
            try:
                self._delete(*key)
                sweep.deleted += 1
            except Exception:  # noqa: BLE001
                sweep.failed += 1
                log.exception("could not delete Deployment %s/%s", *key)
        return sweep

    def _ensure(self, manifest: dict, existing: dict | None, sweep: Sweep) -> None:
        namespace, name = manifest["metadata"]["namespace"], manifest["metadata"]["name"]
        if existing is None:
            self.apps.create_namespaced_deployment(
                namespace, manifest, _request_timeout=self.timeout
            )
            sweep.created += 1
            log.info("created Deployment %s/%s", namespace, name)
            return
        if deployment.is_current(existing, manifest):
            return
        body = {
            **manifest,
            "metadata": {
                **manifest["metadata"],
                "resourceVersion": existing["metadata"].get("resourceVersion"),
            },
        }
        try:
            # a replace at the version read: a concurrent writer's change is never overwritten
            self.apps.replace_namespaced_deployment(
                name, namespace, body, _request_timeout=self.timeout
            )
        except ApiException as exc:
            if exc.status != CONFLICT:
                raise
            log.info("Deployment %s/%s changed meanwhile; the next sweep retries", namespace, name)
            return
        sweep.updated += 1
        log.info("updated Deployment %s/%s", namespace, name)

    def _delete(self, namespace: str, name: str) -> None:
        try:
            self.apps.delete_namespaced_deployment(
                name,
                namespace,
                propagation_policy="Foreground",  # its Pods go before it does
                _request_timeout=self.timeout,
            )
        except ApiException as exc:
            if exc.status != NOT_FOUND:
                raise
        log.info("deleted Deployment %s/%s: its Runtime is gone", namespace, name)

    # --- Pods -------------------------------------------------------------------------

    def relist(self, now: datetime | None = None) -> int:
        """Rows made to match a full list of the provider's Pods; returns rows changed."""
        now = now or timezone.now()
        found = self._json(
            self.core.list_pod_for_all_namespaces(
                label_selector=deployment.pod_selector(),
                _request_timeout=self.timeout,
                _preload_content=False,
            )
        )
        items = found.get("items") or []
        # every listed incarnation is kept, even one that fails to apply below
        listed = [key for key in map(_key, items) if key is not None]
        changed = 0
        for obj in items:
            try:
                changed += kube_pods.apply_pod(kube_pods.observed(obj), now)
            except Exception:  # noqa: BLE001 - one Pod's error never stops the sweep
                log.exception("could not apply pod %s", _describe(obj))
        changed += kube_pods.forget_unlisted(listed, now)
        self.resource_version = (found.get("metadata") or {}).get("resourceVersion") or None
        self.relists += 1
        return changed

    def watch(self, seconds: float | None = None) -> int:
        """Apply Pod events from the last resourceVersion for up to ``seconds``; relist first
        when there is none, and after 410 Gone. Returns the events applied."""
        if self.resource_version is None:
            self.relist()
        seconds = self.watch_seconds if seconds is None else seconds
        deadline = time.monotonic() + seconds
        self._watch = kubernetes.watch.Watch()
        applied = 0
        try:
            for event in self._watch.stream(
                self.core.list_pod_for_all_namespaces,
                label_selector=deployment.pod_selector(),
                resource_version=self.resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=max(1, int(seconds)),
                _request_timeout=(self.timeout, seconds + self.timeout),
            ):
                applied += self._apply_event(event)
                if self.stopping or time.monotonic() >= deadline:
                    self._watch.stop()
        except ApiException as exc:
            if exc.status != GONE:
                raise
            log.info(
                "pod watch at resourceVersion %s expired (410): relisting", self.resource_version
            )
            self.relist()
        except TRANSIENT as exc:
            log.info("pod watch ended (%s); resuming from %s", exc, self.resource_version)
        finally:
            self._watch = None
        return applied

    def _apply_event(self, event: dict) -> int:
        obj = event.get("raw_object") or {}
        kind = event.get("type")
        version = (obj.get("metadata") or {}).get("resourceVersion")
        try:
            if kind in ("ADDED", "MODIFIED"):
                kube_pods.apply_pod(kube_pods.observed(obj), timezone.now())
            elif kind == "DELETED":
                pod = kube_pods.observed(obj)
                kube_pods.forget_pod(pod.namespace, pod.name, pod.uid, timezone.now())
        except Exception:  # noqa: BLE001 - one Pod's error never stops the watch
            log.exception("could not apply %s of pod %s", kind, _describe(obj))
        if version:
            self.resource_version = version
        return kind in ("ADDED", "MODIFIED", "DELETED")

    def stop(self) -> None:
        """Stop at once (a signal handler may call it): the open watch is closed."""
        self.stopping = True
        if self._watch is not None:
            self._watch.stop()

    # --- the whole provider -----------------------------------------------------------

    def sync_once(self) -> Sweep:
        """Deployments ensured, then the Pods listed: what one pass of ``run`` converges to."""
        sweep = self.ensure_deployments()
        self.relist()
        return sweep

    def lead(self, lease: LeaseLock, seconds: float) -> bool:
        """One slice of work (Deployments ensured, Pods watched for at most the Lease's
        ``act_seconds``) if this replica holds the Lease; False, having done nothing, if not."""
        if not lease.hold():
            self.resource_version = None  # whoever leads next starts from a full list
            return False
        self.ensure_deployments()
        self.watch(min(seconds, lease.act_seconds))
        return True

    def run(self, until: Callable[[], bool] | None = None, lease: LeaseLock | None = None) -> None:
        """Ensure Deployments every KRUNTIMES_PROVIDER_SYNC_SECONDS and watch Pods between,
        until ``stop()`` (SIGTERM) or ``until()``; errors back off and retry. With a
        ``lease``, only while holding it; it is released on the way out."""
        interval = settings.KRUNTIMES_PROVIDER_SYNC_SECONDS
        backoff = 1.0
        try:
            while not self.stopping and not (until and until()):
                try:
                    if lease is None:
                        self.ensure_deployments()
                        self.watch(interval)
                    elif not self.lead(lease, interval):
                        _sleep_unless(lambda: self.stopping, lease.act_seconds)
                    backoff = 1.0
                except Exception:  # noqa: BLE001 - the API or the database is away: retry
                    log.exception("cluster provider pass failed; retrying in %.0fs", backoff)
                    self.resource_version = None  # relist once it is back
                    _sleep_unless(lambda: self.stopping, backoff)
                    backoff = min(backoff * 2, 30.0)
        finally:
            if lease is not None:
                lease.release()

    @staticmethod
    def _json(response: urllib3.BaseHTTPResponse) -> dict:
        try:
            return json.loads(response.data or b"{}")
        finally:
            response.release_conn()


def _key(obj: object) -> tuple[str, str, str] | None:
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(metadata, dict):
        return None
    key = (metadata.get("namespace"), metadata.get("name"), metadata.get("uid"))
    return key if all(isinstance(part, str) for part in key) else None  # type: ignore[return-value]


def _describe(obj: dict) -> str:
    metadata = obj.get("metadata") or {} if isinstance(obj, dict) else {}
    return f"{metadata.get('namespace')}/{metadata.get('name')} (uid {metadata.get('uid')})"


def _sleep_unless(stop: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not stop() and time.monotonic() < deadline:
        time.sleep(min(0.2, seconds))
