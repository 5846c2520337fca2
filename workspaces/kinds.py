"""The kind the workspaces app serves: kruntimes.io/v1alpha1 PersistentWorkspace (``pw``)."""

from __future__ import annotations

from portal.machinery.registry import KRUNTIMES, Column, ResourceKind, registry
from portal.machinery.status_strategy import StatusStrategy, final_phases, set_once

GROUP = "kruntimes.io"
VERSION = "v1alpha1"


def _age_of_last_use(obj) -> str:
    return (obj.status or {}).get("lastUsedTime", "") or ""


def register_workspace_kind() -> ResourceKind:
    from .models import WORKSPACE_CLEANUP, PersistentWorkspace, WorkspacePhase
    from .serializers import PersistentWorkspaceSpecSerializer, PersistentWorkspaceStatusSerializer
    from .triggers import on_workspace_change
    from .validators import WORKSPACE_VALIDATORS

    return registry.register(
        ResourceKind(
            group=GROUP,
            version=VERSION,
            kind="PersistentWorkspace",
            plural="persistentworkspaces",
            description=(
                "PersistentWorkspace is a directory kept on one Runtime Pod that the Runs "
                "naming it share, cleaned up after it goes unused."
            ),
            model=PersistentWorkspace,
            categories=KRUNTIMES,
            short_names=("pw",),
            # Released is terminal for scheduling, a Lost workspace is never rebound, and a
            # bound one stays on its pod (name and UID): no status write moves its data
            status=StatusStrategy(
                rules=(
                    final_phases(
                        "PersistentWorkspace",
                        WorkspacePhase.RELEASED,
                        then={WorkspacePhase.LOST: (WorkspacePhase.RELEASED,)},
                    ),
                    set_once("boundPod", "boundPodUID"),
                )
            ),
            body={
                "spec": PersistentWorkspaceSpecSerializer,
                "status": PersistentWorkspaceStatusSerializer,
            },
            validators=WORKSPACE_VALIDATORS,
            # every workspace holds until its bytes are gone (or it never had any)
            default_finalizers=(WORKSPACE_CLEANUP,),
            on_change=(on_workspace_change,),
            columns=(
                Column("PHASE", lambda o: o.phase),
                Column("RUNTIME", lambda o: o.runtime),
                Column("BOUND POD", lambda o: o.bound_pod),
                Column("BOUND POD UID", lambda o: o.bound_pod_uid, wide=True),
                Column("LAST USED", _age_of_last_use, wide=True),
            ),
        )
    )
