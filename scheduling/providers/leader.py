"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go's leaselock keeps it:
``holderIdentity``, ``leaseDurationSeconds``, ``acquireTime``, ``renewTime``,
``leaseTransitions``. Every cluster-provider replica (a sidecar of each control worker) is a
candidate; only the holder acts.

- ``hold()`` is one try to acquire or renew: the Lease is read, and written back (create, or
  PUT with the read ``resourceVersion``: of two candidates exactly one wins, the other sees
  409) only when it is free, expired (``renewTime + leaseDurationSeconds`` passed) or ours.
- A holder that cannot renew (the API away, the Lease taken, a 409) is no longer the
  leader at once: the caller stops acting. A holder acts for at most one slice
  (``act_seconds``, a third of the duration) after each renew, so it has stopped before
  another candidate may take an expired Lease over.
- ``release()`` on a clean stop empties ``holderIdentity`` so a successor need not wait.

The official client's ``kubernetes.leaderelection`` is not used: it sleeps on the wall clock
in its own loop and runs the work in a thread it cannot stop, while here time is injected
and the provider's own loop asks before every slice of work.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import kubernetes
from kubernetes.client.rest import ApiException

log = logging.getLogger(__name__)
MICRO = "%Y-%m-%dT%H:%M:%S.%fZ"  # metav1.MicroTime


def _micro(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(MICRO)


def _parse(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


class LeaseLock:
    def __init__(
        self,
        api: kubernetes.client.ApiClient,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_seconds: int = 15,
        request_timeout: float = 10.0,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.coordination = kubernetes.client.CoordinationV1Api(api)
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_seconds = lease_seconds
        self.timeout = request_timeout
        self.clock = clock
        self.leading = False

    @property
    def act_seconds(self) -> float:
        """How long one slice of work may run between two renewals."""
        return self.lease_seconds / 3

    def hold(self) -> bool:
        """One try to acquire or renew; False: do not act (until a later try says True)."""
        try:
            won = self._try()
        except (ApiException, OSError, Exception) as exc:  # noqa: BLE001 - not renewed
            log.warning("Lease %s/%s: cannot renew: %s", self.namespace, self.name, exc)
            won = False
        if won != self.leading:
            log.info(
                "Lease %s/%s: %s %s",
                self.namespace,
                self.name,
                self.identity,
                "leads" if won else "stepped down",
            )
        self.leading = won
        return won

    def _body(self, spec: dict[str, Any], rv: str | None) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if rv is not None:
            metadata["resourceVersion"] = rv
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": spec,
        }

    def _try(self) -> bool:
        now = self.clock()
        try:
            lease = self.coordination.read_namespaced_lease(
                self.name, self.namespace, _request_timeout=self.timeout
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
            spec = {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self.lease_seconds,
                "acquireTime": _micro(now),
                "renewTime": _micro(now),
                "leaseTransitions": 0,
            }
            return self._write(self._body(spec, None), create=True)
        found = self.coordination.api_client.sanitize_for_serialization(lease)
        spec = dict(found.get("spec") or {})
        holder = spec.get("holderIdentity") or ""
        if holder and holder != self.identity:
            renewed = _parse(spec.get("renewTime")) or _parse(spec.get("acquireTime"))
            duration = int(spec.get("leaseDurationSeconds") or self.lease_seconds)
            if renewed is not None and now < renewed + timedelta(seconds=duration):
                return False  # another holds it and has renewed in time
        if holder != self.identity:
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if holder else 0)
            spec["acquireTime"] = _micro(now)
        spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=self.lease_seconds,
            renewTime=_micro(now),
        )
        return self._write(self._body(spec, found["metadata"].get("resourceVersion")))

    def _write(self, body: dict[str, Any], *, create: bool = False) -> bool:
        try:
            if create:
                self.coordination.create_namespaced_lease(
                    self.namespace, body, _request_timeout=self.timeout
                )
            else:
                self.coordination.replace_namespaced_lease(
                    self.name, self.namespace, body, _request_timeout=self.timeout
                )
        except ApiException as exc:
            if exc.status == 409:  # another candidate wrote first
                return False
            raise
        return True

    def release(self) -> None:
        """On a clean stop: the Lease freed for a successor (best effort)."""
        if not self.leading:
            return
        self.leading = False
        try:
            lease = self.coordination.read_namespaced_lease(
                self.name, self.namespace, _request_timeout=self.timeout
            )
            found = self.coordination.api_client.sanitize_for_serialization(lease)
            spec = dict(found.get("spec") or {})
            if spec.get("holderIdentity") != self.identity:
                return
            spec.update(holderIdentity="", leaseDurationSeconds=1)
            self._write(self._body(spec, found["metadata"].get("resourceVersion")))
        except Exception as exc:  # noqa: BLE001 - the Lease expires anyway
            log.warning("Lease %s/%s: release failed: %s", self.namespace, self.name, exc)
