"""A tiny controller manager and kubelet: Deployments, ReplicaSets and Jobs make Pods,
and Pods start, become Ready, fail or succeed.

- A Deployment owns one ReplicaSet per pod template, ``<deployment>-<pod-template-hash>``;
  a changed template scales the old one to 0. A ReplicaSet keeps ``replicas`` active pods
  ``<replicaset>-<5 chars>`` (template labels plus ``pod-template-hash``, a controller
  ownerReference, a fresh uid): a deleted or failed pod is replaced under a new name,
  extras are deleted (not-ready first). Deleting the Deployment deletes the ReplicaSets and
  their pods (the store's ownerReference GC).
- A Job gets the API server's defaults on create (``spec.selector`` and template labels
  ``batch.kubernetes.io/controller-uid``, ``controller-uid``, ``batch.kubernetes.io/job-name``,
  ``job-name``) and keeps one pod ``<job>-<5 chars>`` until a pod succeeds (condition
  Complete) or more than ``backoffLimit`` (default 6) fail (condition Failed,
  BackoffLimitExceeded); status active/succeeded/failed/startTime/completionTime.
- The kubelet: every new pod is Pending, and ``ready_delay`` seconds later (default 0:
  at once) Running with conditions Ready/ContainersReady True, ``spec.nodeName``, podIP and
  running containerStatuses; a pod matched by ``never_ready`` runs but stays Ready=False.

Hooks: ``set_ready``, ``never_ready``, ``fail_pod``, ``succeed_pod`` (and ``store.delete``
for a pod deleted out of band).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import threading
from collections.abc import Callable

from .store import NAME_SUFFIX_ALPHABET, Event, Store, now, random_suffix

NODE_NAME = "emulated-node"
TERMINAL_PHASES = ("Succeeded", "Failed")
_pod_ips = itertools.count(2)


def template_hash(template: dict) -> str:
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()
    return "".join(NAME_SUFFIX_ALPHABET[byte % len(NAME_SUFFIX_ALPHABET)] for byte in digest[:10])


def owner_reference(obj: dict) -> dict:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_of(obj: dict) -> dict | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def is_ready(pod: dict) -> bool:
    return any(
        condition.get("type") == "Ready" and condition.get("status") == "True"
        for condition in (pod.get("status") or {}).get("conditions") or []
    )


def _condition(kind: str, status: bool, **extra: str) -> dict:
    return {
        "type": kind,
        "status": "True" if status else "False",
        "lastTransitionTime": now(),
        **extra,
    }


class Workloads:
    def __init__(self, store: Store, *, ready_delay: float = 0.0) -> None:
        self.store = store
        self.ready_delay = ready_delay
        self._never_ready: list[Callable[[dict], bool]] = []
        store.defaulters[("batch", "jobs")] = _default_job
        store.defaulters[("apps", "deployments")] = _default_deployment
        store.listeners.append(self.on_event)

    # -- hooks -----------------------------------------------------------------------------

    def never_ready(self, namespace: str, name_prefix: str = "") -> None:
        """Pods created from now on in ``namespace`` named ``name_prefix...`` run but never
        become Ready (until ``set_ready``)."""
        self._never_ready.append(
            lambda pod: (
                pod["metadata"]["namespace"] == namespace
                and pod["metadata"]["name"].startswith(name_prefix)
            )
        )

    def set_ready(self, namespace: str, name: str, ready: bool = True) -> dict | None:
        return self.store.mutate("", "pods", namespace, name, lambda pod: _set_ready(pod, ready))

    def fail_pod(
        self, namespace: str, name: str, exit_code: int = 1, reason: str = "Error"
    ) -> dict | None:
        return self.store.mutate(
            "", "pods", namespace, name, lambda pod: _terminate(pod, "Failed", exit_code, reason)
        )

    def succeed_pod(self, namespace: str, name: str) -> dict | None:
        return self.store.mutate(
            "", "pods", namespace, name, lambda pod: _terminate(pod, "Succeeded", 0, "Completed")
        )

    # -- reconciling -----------------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        kind = (event.group, event.plural)
        meta = event.obj["metadata"]
        namespace, name = meta.get("namespace"), meta["name"]
        if kind == ("apps", "deployments") and event.type != "DELETED":
            self.sync_deployment(namespace, name)
        elif kind == ("apps", "replicasets"):
            if event.type != "DELETED":
                self.sync_replicaset(namespace, name)
            self._sync_owner(event.obj)
        elif kind == ("batch", "jobs") and event.type != "DELETED":
            self.sync_job(namespace, name)
        elif kind == ("", "pods"):
            if event.type == "ADDED":
                self._schedule_start(event.obj)
            self._sync_owner(event.obj)

    def _sync_owner(self, obj: dict) -> None:
        ref = controller_of(obj)
        namespace = obj["metadata"].get("namespace")
        if ref is None:
            return
        if ref["kind"] == "ReplicaSet":
            self.sync_replicaset(namespace, ref["name"])
        elif ref["kind"] == "Deployment":
            self.sync_deployment(namespace, ref["name"])
        elif ref["kind"] == "Job":
            self.sync_job(namespace, ref["name"])

    def _owned(self, plural_group: tuple[str, str], namespace: str, owner: dict) -> list[dict]:
        uid = owner["metadata"]["uid"]
        return [
            obj
            for obj in self.store.select(plural_group[0], plural_group[1], namespace)
            if (controller_of(obj) or {}).get("uid") == uid
        ]

    def sync_deployment(self, namespace: str, name: str) -> None:
        deployment = self.store.find("apps", "deployments", namespace, name)
        if deployment is None or deployment["metadata"].get("deletionTimestamp"):
            return
        spec = deployment.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        pod_hash = template_hash(template)
        replicas = int(spec.get("replicas", 1))
        owned = self._owned(("apps", "replicasets"), namespace, deployment)
        if not spec.get("paused"):
            current_name = f"{name}-{pod_hash}"
            for replicaset in owned:
                if replicaset["metadata"]["name"] != current_name:
                    self.store.mutate(
                        "apps", "replicasets", namespace, replicaset["metadata"]["name"], _scale(0)
                    )
            if not any(rs["metadata"]["name"] == current_name for rs in owned):
                labels = {
                    **(template.get("metadata") or {}).get("labels", {}),
                    "pod-template-hash": pod_hash,
                }
                template.setdefault("metadata", {})["labels"] = labels
                selector = copy.deepcopy(spec.get("selector") or {})
                selector.setdefault("matchLabels", {})["pod-template-hash"] = pod_hash
                self.store.create(
                    "apps",
                    "replicasets",
                    namespace,
                    {
                        "metadata": {
                            "name": current_name,
                            "labels": labels,
                            "ownerReferences": [owner_reference(deployment)],
                        },
                        "spec": {"replicas": replicas, "selector": selector, "template": template},
                    },
                )
            else:
                self.store.mutate("apps", "replicasets", namespace, current_name, _scale(replicas))
            owned = self._owned(("apps", "replicasets"), namespace, deployment)
        totals = {
            field: sum(int((rs.get("status") or {}).get(field, 0)) for rs in owned)
            for field in ("replicas", "readyReplicas", "availableReplicas")
        }
        updated = sum(
            int((rs.get("status") or {}).get("replicas", 0))
            for rs in owned
            if rs["metadata"]["name"] == f"{name}-{pod_hash}"
        )
        status = {
            "observedGeneration": deployment["metadata"]["generation"],
            "replicas": totals["replicas"],
            "updatedReplicas": updated,
            "readyReplicas": totals["readyReplicas"],
            "availableReplicas": totals["availableReplicas"],
            "unavailableReplicas": max(replicas - totals["availableReplicas"], 0),
        }
        available = totals["availableReplicas"] >= replicas
        self.store.mutate(
            "apps",
            "deployments",
            namespace,
            name,
            _set_status(
                status,
                _condition(
                    "Available",
                    available,
                    reason="MinimumReplicasAvailable"
                    if available
                    else "MinimumReplicasUnavailable",
                ),
            ),
        )

    def sync_replicaset(self, namespace: str, name: str) -> None:
        replicaset = self.store.find("apps", "replicasets", namespace, name)
        if replicaset is None or replicaset["metadata"].get("deletionTimestamp"):
            return
        spec = replicaset.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        pods = self._owned(("", "pods"), namespace, replicaset)
        active = [
            pod
            for pod in pods
            if (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES
            and not pod["metadata"].get("deletionTimestamp")
        ]
        template = spec.get("template") or {}
        for _ in range(replicas - len(active)):
            self._create_pod(namespace, f"{name}-", template, replicaset, {})
        if len(active) > replicas:
            # not-ready first, then the newest (as the ReplicaSet controller ranks them)
            ranked = sorted(
                active, key=lambda pod: (is_ready(pod), -int(pod["metadata"]["resourceVersion"]))
            )
            for pod in ranked[: len(active) - replicas]:
                self.store.delete("", "pods", namespace, pod["metadata"]["name"])
        pods = [
            pod
            for pod in self._owned(("", "pods"), namespace, replicaset)
            if (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES
        ]
        ready = sum(1 for pod in pods if is_ready(pod))
        status = {
            "replicas": len(pods),
            "fullyLabeledReplicas": len(pods),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": replicaset["metadata"]["generation"],
        }
        self.store.mutate("apps", "replicasets", namespace, name, _set_status(status))

    def sync_job(self, namespace: str, name: str) -> None:
        job = self.store.find("batch", "jobs", namespace, name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return
        spec = job.get("spec") or {}
        old_status = job.get("status") or {}
        conditions = old_status.get("conditions") or []
        finished = any(
            c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
            for c in conditions
        )
        pods = self._owned(("", "pods"), namespace, job)
        succeeded = sum(1 for pod in pods if pod["status"].get("phase") == "Succeeded")
        failed = sum(1 for pod in pods if pod["status"].get("phase") == "Failed")
        active = [
            pod
            for pod in pods
            if pod["status"].get("phase") not in TERMINAL_PHASES
            and not pod["metadata"].get("deletionTimestamp")
        ]
        backoff_limit = int(spec.get("backoffLimit", 6))
        status = copy.deepcopy(old_status)
        status.setdefault("startTime", now())
        status["succeeded"], status["failed"] = succeeded, failed
        if not finished:
            if succeeded >= int(spec.get("completions", 1) or 1):
                status["completionTime"] = now()
                status["conditions"] = conditions + [
                    _condition("SuccessCriteriaMet", True, reason="CompletionsReached"),
                    _condition("Complete", True, reason="CompletionsReached"),
                ]
                finished = True
            elif failed > backoff_limit:
                message = "Job has reached the specified backoff limit"
                status["conditions"] = conditions + [
                    _condition(
                        "FailureTarget", True, reason="BackoffLimitExceeded", message=message
                    ),
                    _condition("Failed", True, reason="BackoffLimitExceeded", message=message),
                ]
                finished = True
            elif not active and not spec.get("suspend"):
                template = spec.get("template") or {}
                active = [self._create_pod(namespace, f"{name}-", template, job, {})]
        if finished:
            for pod in active:
                self.store.delete("", "pods", namespace, pod["metadata"]["name"])
            active = []
        status["active"] = len(active)
        status["ready"] = sum(1 for pod in active if is_ready(pod))
        for zero in ("active", "succeeded", "failed"):
            if not status[zero]:
                del status[zero]
        self.store.mutate("batch", "jobs", namespace, name, _set_status(status))

    def _create_pod(
        self, namespace: str, prefix: str, template: dict, owner: dict, labels: dict
    ) -> dict:
        meta = copy.deepcopy(template.get("metadata") or {})
        body = {
            "metadata": {
                "generateName": prefix,
                "labels": {**(meta.get("labels") or {}), **labels},
                "annotations": meta.get("annotations") or {},
                "ownerReferences": [owner_reference(owner)],
            },
            "spec": copy.deepcopy(template.get("spec") or {}),
        }
        if not body["metadata"]["annotations"]:
            del body["metadata"]["annotations"]
        for _ in range(10):  # a generated name may be taken
            body["metadata"]["name"] = prefix + random_suffix()
            if self.store.find("", "pods", namespace, body["metadata"]["name"]) is None:
                break
        return self.store.create("", "pods", namespace, body)

    # -- the kubelet -----------------------------------------------------------------------

    def _schedule_start(self, pod: dict) -> None:
        if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
            return
        namespace, name, uid = (
            pod["metadata"]["namespace"],
            pod["metadata"]["name"],
            pod["metadata"]["uid"],
        )
        ready = not any(predicate(pod) for predicate in self._never_ready)
        if self.ready_delay <= 0:
            self._start(namespace, name, uid, ready)
            return
        timer = threading.Timer(self.ready_delay, self._start, (namespace, name, uid, ready))
        timer.daemon = True
        timer.start()

    def _start(self, namespace: str, name: str, uid: str, ready: bool) -> None:
        def start(pod: dict) -> None:
            if pod["metadata"]["uid"] != uid or pod["status"].get("phase") != "Pending":
                return
            started = now()
            pod.setdefault("spec", {})["nodeName"] = NODE_NAME
            pod["status"].update(
                phase="Running",
                hostIP="10.0.0.1",
                podIP=_pod_ip(),
                startTime=started,
                containerStatuses=[
                    {
                        "name": container.get("name", ""),
                        "image": container.get("image", ""),
                        "imageID": "",
                        "ready": ready,
                        "restartCount": 0,
                        "started": True,
                        "state": {"running": {"startedAt": started}},
                    }
                    for container in pod["spec"].get("containers") or []
                ],
                conditions=[
                    _condition("PodScheduled", True),
                    _condition("Initialized", True),
                    _condition("ContainersReady", ready),
                    _condition("Ready", ready),
                ],
            )

        self.store.mutate("", "pods", namespace, name, start)


def _pod_ip() -> str:
    number = next(_pod_ips)
    return f"10.1.{number // 250 % 250}.{number % 250 + 2}"


def _set_ready(pod: dict, ready: bool) -> None:
    status = pod.setdefault("status", {})
    if status.get("phase") != "Running":
        return
    for condition in status.get("conditions") or []:
        if condition["type"] in ("Ready", "ContainersReady") and condition["status"] != (
            "True" if ready else "False"
        ):
            condition.update(status="True" if ready else "False", lastTransitionTime=now())
    for container in status.get("containerStatuses") or []:
        container["ready"] = ready


def _terminate(pod: dict, phase: str, exit_code: int, reason: str) -> None:
    status = pod.setdefault("status", {})
    status["phase"] = phase
    finished = now()
    for condition in status.get("conditions") or []:
        if condition["type"] in ("Ready", "ContainersReady"):
            condition.update(status="False", lastTransitionTime=finished, reason="PodCompleted")
    for container in status.get("containerStatuses") or []:
        started = ((container.get("state") or {}).get("running") or {}).get("startedAt", finished)
        container["ready"] = False
        container["started"] = False
        container["state"] = {
            "terminated": {
                "exitCode": exit_code,
                "reason": reason,
                "startedAt": started,
                "finishedAt": finished,
            }
        }


def _scale(replicas: int) -> Callable[[dict], None]:
    def scale(obj: dict) -> None:
        if obj.setdefault("spec", {}).get("replicas") != replicas:
            obj["spec"]["replicas"] = replicas
            obj["metadata"]["generation"] = int(obj["metadata"].get("generation", 1)) + 1

    return scale


def _set_status(status: dict, *conditions: dict) -> Callable[[dict], None]:
    def write(obj: dict) -> None:
        new = copy.deepcopy(status)
        if conditions:
            old = {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}
            merged = []
            for condition in conditions:
                previous = old.get(condition["type"])
                if (
                    previous is not None
                    and previous["status"] == condition["status"]
                    and previous.get("reason") == condition.get("reason")
                ):
                    merged.append(previous)  # unchanged: keep its transition time
                else:
                    merged.append(condition)
            new["conditions"] = merged
        obj["status"] = new

    return write


def _default_job(job: dict) -> None:
    """What the API server fills in on a Job's create (manualSelector unset)."""
    spec = job.setdefault("spec", {})
    uid, name = job["metadata"]["uid"], job["metadata"]["name"]
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completions", 1)
    spec.setdefault("parallelism", 1)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("selector", {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    template_meta = spec.setdefault("template", {}).setdefault("metadata", {})
    template_meta["labels"] = {
        **(template_meta.get("labels") or {}),
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
        "controller-uid": uid,
        "job-name": name,
    }


def _default_deployment(deployment: dict) -> None:
    spec = deployment.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault(
        "strategy",
        {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
    )
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
