"""The Function section of a function Run's page: where it is invoked, since when it serves, and
what its invocations did (the owning runtimed's bounded figures, from its last heartbeat)."""

from __future__ import annotations

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from portal.machinery.conditions import time_or_none
from portal.resource_admin import NONE, age, timestamp
from scheduling.models import Run, RunPhase, RuntimePod

FIELDS = ["endpoint_display", "ready_since_display", "invocations_display", "errors_display"]


def stats(run: Run) -> dict | None:
    """The owning pod's figures for the Run's current attempt, or None."""
    if run.phase != RunPhase.READY or not run.assigned_pod_uid:
        return None
    pod = (
        RuntimePod.objects.filter(
            namespace=run.namespace, name=run.assigned_pod, uid=run.assigned_pod_uid
        )
        .only("active_runs")
        .first()
    )
    for entry in (pod.active_runs if pod else None) or []:
        if (
            isinstance(entry, dict)
            and entry.get("uid") == str(run.uid)
            and entry.get("attempt") == run.attempt
            and isinstance(entry.get("function"), dict)
        ):
            return entry["function"]
    return None


def endpoint(run: Run) -> SafeString | str:
    published = (run.status or {}).get("endpoint") or {}
    url = published.get("url")
    if not url:
        ready = next(
            (c for c in (run.status or {}).get("conditions") or [] if c.get("type") == "Ready"),
            None,
        )
        return (ready or {}).get("message") or NONE
    curl = (
        f'curl --cacert ca.crt -H "Authorization: Bearer $TOKEN" '
        f"-H 'Content-Type: application/json' -d '{{}}' {url}"
    )
    return format_html('<code class="k-endpoint">{}</code><div class="k-muted">{}</div>', url, curl)


def ready_since(run: Run) -> SafeString | str:
    ready = next(
        (c for c in (run.status or {}).get("conditions") or [] if c.get("type") == "Ready"), None
    )
    if not ready or ready.get("status") != "True":
        return NONE
    since = time_or_none(ready.get("lastTransitionTime"))
    return format_html("{} ({} ago)", timestamp(since), age(since)) if since else NONE


def invocations(run: Run, figures: dict | None) -> SafeString | str:
    if figures is None:
        return NONE
    return format_html(
        "{} in all · {}/s over the last minute",
        figures.get("invocations", 0),
        figures.get("perSecond", 0),
    )


def errors(figures: dict | None) -> SafeString | str:
    if figures is None:
        return NONE
    recent = figures.get("recentErrors") or []
    if not recent:
        return format_html("{}", figures.get("errors", 0))
    return format_html(
        '{} · recent: <ul class="k-errors">{}</ul>',
        figures.get("errors", 0),
        format_html_join("", "<li><code>{}</code></li>", ((text,) for text in recent)),
    )
