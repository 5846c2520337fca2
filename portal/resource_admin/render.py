"""Small HTML renderers for resource pages, tolerant of any JSON shape."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from django.contrib import admin
from django.core.serializers.json import DjangoJSONEncoder
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from portal.machinery.conditions import format_time
from portal.machinery.humanize import human_duration
from portal.machinery.registry import ResourceKind

GOOD_PHASES = {
    "active",
    "ready",
    "running",
    "succeeded",
    "bound",
    "available",
    "complete",
    "completed",
    "accepted",
    "healthy",
}
BAD_PHASES = {
    "failed",
    "error",
    "lost",
    "unschedulable",
    "crashloopbackoff",
    "degraded",
    "rejected",
    "invalid",
}
WARN_PHASES = {
    "terminating",
    "deleting",
    "releasing",
    "cancelling",
    "canceling",
    "cancelled",
    "canceled",
    "fencing",
}
PENDING_PHASES = {
    "pending",
    "waiting",
    "binding",
    "provisioning",
    "scheduling",
    "scheduled",
    "creating",
    "starting",
    "queued",
    "unknown",
    "",
}


def age(dt: Any) -> str:
    if dt is None:
        return ""
    try:
        return human_duration((timezone.now() - dt).total_seconds())
    except (TypeError, ValueError):
        return ""


def timestamp(dt: Any) -> str:
    if dt is None:
        return ""
    try:
        return format_time(dt)
    except (TypeError, ValueError, AttributeError):
        return str(dt)


def compact(value: Any) -> str:
    """A printable cell for any JSON value."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        try:
            return json.dumps(value, separators=(",", ":"), sort_keys=True, cls=DjangoJSONEncoder)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def phase_tone(phase: str) -> str:
    key = (phase or "").strip().lower()
    if key in GOOD_PHASES:
        return "ok"
    if key in BAD_PHASES:
        return "bad"
    if key in WARN_PHASES:
        return "warn"
    if key in PENDING_PHASES:
        return "pending"
    return "info"


NONE = mark_safe('<span class="k-muted">none</span>')


def badge(text: Any, tone: str, title: str = "") -> SafeString:
    return format_html('<span class="k-badge k-{}" title="{}">{}</span>', tone, title, text)


def condition_list(status: Any) -> list[dict]:
    """``status.conditions`` as a list of dicts, whatever the stored shape."""
    if not isinstance(status, dict):
        return []
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        return []
    return [c for c in conditions if isinstance(c, dict)]


def condition_tone(status: Any, reason: Any = None, failure_reason: Any = None) -> str:
    """Green True, red False, grey Unknown; but a True condition that carries the reason an
    object failed with (e.g. ``Completed=True`` with ``RuntimeExecute``) is the failure: red."""
    if str(status) == "True" and failure_reason and reason == failure_reason:
        return "bad"
    return {"True": "ok", "False": "bad"}.get(str(status), "unknown")


def failure_reason(status: Any) -> str:
    """``status.reason`` when ``status.phase`` is a failed one, else ''."""
    if not isinstance(status, dict) or phase_tone(str(status.get("phase") or "")) != "bad":
        return ""
    return str(status.get("reason") or "")


ConditionTone = Callable[[dict, str], str]  # (condition, the failure reason) -> tone


def default_condition_tone(cond: dict, failed: str) -> str:
    return condition_tone(compact(cond.get("status")) or "Unknown", cond.get("reason"), failed)


def condition_badges(status: Any, tone: ConditionTone = default_condition_tone) -> SafeString:
    """A badge per condition, coloured by ``tone`` (a kind says what its conditions mean)."""
    parts = []
    failed = failure_reason(status)
    for cond in condition_list(status):
        ctype = compact(cond.get("type")) or "?"
        state = compact(cond.get("status")) or "Unknown"
        reason = compact(cond.get("reason"))
        message = compact(cond.get("message"))
        title = f"{ctype}={state}" + (f" ({reason})" if reason else "")
        if message:
            title += f": {message[:300]}"
        parts.append(badge(ctype, tone(cond, failed), title))
    return mark_safe(" ".join(parts))  # noqa: S308 - each part is escaped by format_html


def label_pairs(labels: Any) -> list[tuple[str, str]]:
    if not isinstance(labels, dict):
        return []
    return sorted((str(k), compact(v)) for k, v in labels.items())


def label_chips(labels: Any, limit: int | None = None) -> SafeString:
    pairs = label_pairs(labels)
    shown = pairs if limit is None else pairs[:limit]
    html = format_html_join(" ", '<span class="k-chip" title="{0}={1}">{0}={1}</span>', shown)
    hidden = pairs[len(shown) :]
    if hidden:
        more = ", ".join(f"{k}={v}" for k, v in hidden)
        html = format_html(
            '{} <span class="k-chip k-more" title="{}">+{}</span>', html, more, len(hidden)
        )
    return html


def simple_table(
    headers: Iterable[str], rows: Iterable[Iterable[Any]], css: str = "k-table"
) -> SafeString:
    head = format_html_join("", "<th>{}</th>", ((h,) for h in headers))
    body = format_html_join(
        "",
        "<tr>{}</tr>",
        ((format_html_join("", "<td>{}</td>", ((cell,) for cell in row)),) for row in rows),
    )
    return format_html(
        '<table class="{}"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>', css, head, body
    )


def code_list(values: Any) -> SafeString:
    if values is None:
        return mark_safe("")
    if not isinstance(values, list):
        values = [values]
    return format_html_join(
        " ", "<code>{}</code>", ((compact(v) if v != "" else '""',) for v in values)
    )


def admin_change_url(obj: Any, admin_site: admin.AdminSite | None = None) -> str | None:
    """The admin change page of a row, when its model is registered."""
    site = admin_site or admin.site
    model = type(obj)
    if not site.is_registered(model):
        return None
    opts = model._meta
    try:
        return reverse(f"{site.name}:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
    except NoReverseMatch:
        return None


def find_object(kind: ResourceKind | None, namespace: str | None, name: str) -> Any:
    if kind is None or not isinstance(name, str):
        return None
    query = kind.model.objects.filter(name=name)
    if kind.namespaced:
        query = query.filter(namespace=namespace or "")
    return query.first()


def link_to(obj: Any, text: str, admin_site: admin.AdminSite | None = None) -> SafeString:
    url = admin_change_url(obj, admin_site) if obj is not None else None
    if url is None:
        return format_html("{}", text)
    return format_html('<a href="{}">{}</a>', url, text)


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def selector_text(selector: Any) -> str:
    """A LabelSelector as kubectl prints one: ``app=web,tier in (a,b),!debug``."""
    selector = _dict(selector)
    parts = [f"{k}={compact(v)}" for k, v in sorted(_dict(selector.get("matchLabels")).items())]
    for expr in selector.get("matchExpressions") or []:
        expr = _dict(expr)
        key, op = compact(expr.get("key")), compact(expr.get("operator"))
        values = ",".join(compact(v) for v in expr.get("values") or [])
        parts.append(
            {
                "In": f"{key} in ({values})",
                "NotIn": f"{key} notin ({values})",
                "Exists": key,
                "DoesNotExist": f"!{key}",
            }.get(op, f"{key} {op} {values}")
        )
    return ",".join(parts) or compact(selector)
