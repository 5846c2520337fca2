"""What the scheduling pages share: pod cells (ready, heartbeat, capacity), the Runs bound to
pods, and links to a pod's row on its Runtime's page. Lookups are batched per page."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.contrib import admin
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from portal.resource_admin import NONE, age, badge, compact, link_to, timestamp
from portal.resource_admin.render import phase_tone
from scheduling.models import ACTIVE_PHASES, Run, Runtime, RuntimePod
from scheduling.pods import NOT_READY_AFTER


def pod_anchor(name: str) -> str:
    """The id of a pod's row in the "Runtime Pods" table of its Runtime's page."""
    return f"pod-{name}"


def runtime_pks(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """(namespace, runtime name) -> Runtime pk, in one query."""
    pairs = {(ns, name) for ns, name in pairs if name}
    if not pairs:
        return {}
    rows = Runtime.objects.filter(
        namespace__in={ns for ns, _ in pairs}, name__in={name for _, name in pairs}
    )
    return {
        (ns, name): pk
        for ns, name, pk in rows.values_list("namespace", "name", "pk")
        if (ns, name) in pairs
    }


def runtime_url(site: admin.AdminSite, pk: int | None) -> str | None:
    if pk is None:
        return None
    try:
        return reverse(f"{site.name}:scheduling_runtime_change", args=[pk])
    except NoReverseMatch:
        return None


def runtime_link(site: admin.AdminSite, pk: int | None, name: str) -> SafeString:
    url = runtime_url(site, pk)
    if url is None:
        return format_html('{} <span class="k-muted">(not found)</span>', name) if name else NONE
    return format_html('<a href="{}">{}</a>', url, name)


def pod_row_link(site: admin.AdminSite, runtime_pk: int | None, pod_name: str) -> SafeString:
    """The pod's name, linked to its row on the Runtime's page."""
    url = runtime_url(site, runtime_pk)
    if url is None:
        return format_html("{}", pod_name)
    return format_html(
        '<a href="{}#{}" title="this pod on its Runtime\'s page">{}</a>',
        url,
        pod_anchor(pod_name),
        pod_name,
    )


def bound_runs(pods: Iterable[RuntimePod]) -> dict[int, list[tuple[int, str, str]]]:
    """pod pk -> the active Runs bound to it, (pk, name, phase): one query for all the pods.

    A Run counts when both the pod's name and UID match (a pod re-created under its old name
    does not inherit the old incarnation's Runs), as the scheduler counts capacity."""
    pods = list(pods)
    found: dict[int, list[tuple[int, str, str]]] = {pod.pk: [] for pod in pods}
    if not pods:
        return found
    by_key = {(pod.namespace, pod.name): pod for pod in pods}
    rows = (
        Run.objects.filter(
            phase__in=ACTIVE_PHASES,
            namespace__in={pod.namespace for pod in pods},
            assigned_pod__in={pod.name for pod in pods},
        )
        .order_by("name")
        .values_list("pk", "namespace", "name", "assigned_pod", "assigned_pod_uid", "phase")
    )
    for pk, namespace, name, pod_name, pod_uid, phase in rows:
        pod = by_key.get((namespace, pod_name))
        if pod is not None and str(pod.uid) == pod_uid:
            found[pod.pk].append((pk, name, phase))
    return found


def reported_runs(pods: Iterable[RuntimePod]) -> dict[str, tuple[int, str]]:
    """Run UID -> (pk, name) for every Run the pods' heartbeats report executing: one query."""
    uids = {
        str(entry.get("uid"))
        for pod in pods
        for entry in entries(pod.active_runs)
        if entry.get("uid")
    }
    if not uids:
        return {}
    parsed: dict[str, uuid.UUID] = {}
    for uid in uids:
        try:
            parsed[uid] = uuid.UUID(uid)
        except ValueError:
            continue
    found = {
        uid: (pk, name)
        for uid, pk, name in Run.objects.filter(uid__in=set(parsed.values())).values_list(
            "uid", "pk", "name"
        )
    }
    return {raw: found[uid] for raw, uid in parsed.items() if uid in found}


def entries(active_runs: Any) -> list[dict]:
    """A heartbeat's ``activeRuns`` as dicts, whatever was stored."""
    if not isinstance(active_runs, list):
        return []
    return [entry for entry in active_runs if isinstance(entry, dict)]


def run_links(site: admin.AdminSite, runs: Iterable[tuple[int | None, str, str]]) -> SafeString:
    """(pk, name, note) -> linked names, each with a muted note (phase or attempt)."""
    parts = []
    for pk, name, note in runs:
        url = None
        if pk is not None:
            try:
                url = reverse(f"{site.name}:scheduling_run_change", args=[pk])
            except NoReverseMatch:
                url = None
        text = format_html('<a href="{}">{}</a>', url, name) if url else format_html("{}", name)
        parts.append(format_html('{} <span class="k-muted">{}</span>', text, note))
    if not parts:
        return NONE
    return format_html_join(", ", "{}", ((part,) for part in parts))


def ready_badge(ready: bool) -> SafeString:
    return badge("Ready", "ok") if ready else badge("NotReady", "bad")


def phase_badge(phase: str) -> SafeString:
    return badge(phase, phase_tone(phase)) if phase else NONE


def heartbeat_cell(last: datetime | None, now: datetime | None = None) -> SafeString:
    """How long ago the pod's runtimed reported; red once the pod would be marked not ready."""
    if last is None:
        return badge("never", "bad", "runtimed has not reported from this pod")
    silent = (now or timezone.now()) - last
    if silent > NOT_READY_AFTER:
        return badge(
            f"{age(last)} ago",
            "bad",
            f"last heartbeat {timestamp(last)}: a pod silent for more than "
            f"{int(NOT_READY_AFTER.total_seconds())}s is not ready",
        )
    return format_html('<span title="last heartbeat {}">{} ago</span>', timestamp(last), age(last))


def fenced_pod_cell(
    site: admin.AdminSite, runtime_pk: int | None, namespace: str, name: str, uid: str
) -> SafeString:
    """A pod named by name AND uid (a Run's assigned pod, a workspace's bound pod): its row,
    its uid, and whether that pod is still there (ready, heartbeat) or gone."""
    link = pod_row_link(site, runtime_pk, name)
    uid_text = format_html('<span class="k-muted">uid</span> <code>{}</code>', uid or "?")
    pod = RuntimePod.objects.filter(namespace=namespace, name=name).first()
    if pod is None or str(pod.uid) != uid:
        gone = badge("gone", "bad", "no Runtime Pod with this name and UID exists any more")
        return format_html("{} {} {}", link, uid_text, gone)
    return format_html(
        '{} {} {} <span class="k-muted">heartbeat</span> {}',
        link,
        uid_text,
        ready_badge(pod.ready),
        heartbeat_cell(pod.last_heartbeat),
    )


def capacity_text(capacity: Any) -> str:
    if not isinstance(capacity, dict):
        return compact(capacity)
    return ", ".join(f"{name}={compact(value)}" for name, value in sorted(capacity.items()))


def used_runs(count: int, capacity: Any) -> SafeString:
    """``1/2`` (active Runs bound / ``runs`` capacity), warning-coloured when full."""
    cap = capacity.get("runs") if isinstance(capacity, dict) else None
    if not isinstance(cap, int):
        return format_html("{}", count)
    text = f"{count}/{cap}"
    if count >= cap:
        return badge(text, "warn", "at capacity: no more Runs fit on this pod")
    return format_html("{}", text)


def pod_link(site: admin.AdminSite, pod: RuntimePod, text: str | None = None) -> SafeString:
    return link_to(pod, text or pod.name, site)
