"""``runtimed.delete_workspace``: the pod's part of a PersistentWorkspace's cleanup.

The controller asks the bound pod to delete the workspace's bytes. runtimed ignores a request
meant for another pod (name and UID must be its own), does nothing while a Run here uses the
workspace (the controller asks again later), else deletes ``<workspace>/persistent/<name>``
(a missing directory counts as deleted; a symlink is refused) and sends
``workspaces.workspace_deleted`` so the controller removes the cleanup finalizer. runtimed
writes no workspace status.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from . import persistent
from .config import PodConfig
from .protocol import WORKSPACE_DELETED_TASK, DeleteWorkspacePayload, WorkspaceDeleted

log = logging.getLogger("runtimed.cleanup")


class Sender(Protocol):
    """What sends a task to the control plane (``reporting.Reporter``)."""

    def send(self, name: str, kwargs: Any, *, retries: int | None = None) -> bool: ...


def parse_request(payload: Any) -> DeleteWorkspacePayload | None:
    """The request, or None (logged) when it is malformed or its name is not a workspace's."""
    if not isinstance(payload, dict) or not isinstance(payload.get("pod"), dict):
        log.error("dropping a malformed workspace delete request")
        return None
    namespace, name, uid = (payload.get(key) for key in ("namespace", "name", "uid"))
    pod = payload["pod"]
    if not all(isinstance(v, str) and v for v in (namespace, name, uid)):
        log.error("dropping a workspace delete request without namespace, name and uid")
        return None
    try:
        persistent.check_name(name)
    except persistent.WorkspaceError as exc:
        log.error("dropping a workspace delete request: %s", exc)
        return None
    return {
        "namespace": str(namespace),
        "name": str(name),
        "uid": str(uid),
        "pod": {"name": str(pod.get("name")), "uid": str(pod.get("uid"))},
    }


class WorkspaceCleaner:
    """Deletes this pod's persistent workspaces on request, never one a local Run uses."""

    def __init__(self, config: PodConfig, sender: Sender, use: persistent.WorkspaceUse) -> None:
        self.config = config
        self.sender = sender
        self.use = use

    def delete(self, payload: Any) -> bool:
        """Handle one request; True when the directory is gone and the controller was told."""
        request = parse_request(payload)
        if request is None or not self._for_this_pod(request):
            return False
        name = request["name"]
        if not self.use.begin_delete(name):
            log.info("workspace %s is in use by a Run here; not deleting it yet", name)
            return False
        try:
            persistent.delete(self.config.workspace, name)
        except (OSError, persistent.WorkspaceError) as exc:
            log.error("cannot delete workspace %s: %s", name, exc)
            return False
        finally:
            self.use.end_delete(name)
        log.info("deleted workspace %s/%s", request["namespace"], name)
        return self.sender.send(WORKSPACE_DELETED_TASK, {"payload": self._deleted(request)})

    def _for_this_pod(self, request: DeleteWorkspacePayload) -> bool:
        pod = request["pod"]
        if (pod["name"], pod["uid"]) == (self.config.pod_name, self.config.pod_uid):
            return True
        log.warning(
            "workspace %s/%s delete request is for pod %s (uid %s), not this pod %s (uid %s)",
            request["namespace"],
            request["name"],
            pod["name"],
            pod["uid"],
            self.config.pod_name,
            self.config.pod_uid,
        )
        return False

    def _deleted(self, request: DeleteWorkspacePayload) -> WorkspaceDeleted:
        return {
            "namespace": request["namespace"],
            "name": request["name"],
            "uid": request["uid"],
            "podName": self.config.pod_name,
            "podUID": self.config.pod_uid,
        }
