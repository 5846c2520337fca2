"""The identities the garbage and namespace collectors write with: ``portal.machinery.gc``
runs them, and the store orphans dependents as the garbage collector."""

from __future__ import annotations

from portal.auth.identities import register_controller

from .admission import WriteContext

# The identities the collectors write with (kube-controller-manager's generic-garbage-collector
# and namespace-controller hold the same verbs).
GARBAGE_COLLECTOR = WriteContext(
    user=register_controller(
        "garbage-collector",
        [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "patch", "delete"]}],
    )
)
NAMESPACE_CONTROLLER = WriteContext(
    user=register_controller(
        "namespace-controller",
        [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "delete"]},
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["patch"]},
        ],
    )
)
