"""The WorkflowRun page's job workspaces: each steps job's PersistentWorkspace (a child the run
recorded making), its phase, and how long it outlives its last use (``ttlSecondsAfterUnused``,
then ``DeleteAfterTTL``): when a finished run's files are gone, so a reader knows how long a
rerun of failed jobs can still read what the jobs left there."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString

from portal.resource_admin import NONE, badge, link_to, simple_table, timestamp
from portal.resource_admin.render import phase_tone
from workspaces.models import PersistentWorkspace
from workspaces.ownership import WORKFLOW_JOB_LABEL

from .models import WorkflowRun


def recorded(wfr: WorkflowRun) -> list[PersistentWorkspace]:
    status = wfr.status if isinstance(wfr.status, dict) else {}
    uids = [
        c.get("uid")
        for c in status.get("children") or []
        if isinstance(c, dict) and c.get("kind") == "PersistentWorkspace"
    ]
    if not uids:
        return []
    return list(
        PersistentWorkspace.objects.filter(namespace=wfr.namespace, uid__in=uids).order_by("name")
    )


def lifetime(ws: PersistentWorkspace) -> Any:
    """Its TTL, and when it ends (or that the clock starts once it is unused)."""
    ttl = (ws.spec or {}).get("ttlSecondsAfterUnused")
    if ttl is None:
        return format_html('<span class="k-muted">{}</span>', "kept until deleted")
    if ws.last_used is None:
        return format_html('{}s <span class="k-muted">after its last use (in use)</span>', ttl)
    return format_html(
        "{}s after its last use: until {}", ttl, timestamp(ws.last_used + timedelta(seconds=ttl))
    )


def table(wfr: WorkflowRun, site: Any) -> SafeString:
    rows = [
        (
            (ws.labels or {}).get(WORKFLOW_JOB_LABEL, ""),
            link_to(ws, ws.name, site),
            badge(ws.phase, phase_tone(ws.phase)),
            lifetime(ws),
        )
        for ws in recorded(wfr)
    ]
    if not rows:
        return NONE
    return simple_table(("job", "workspace", "phase", "kept"), rows)
