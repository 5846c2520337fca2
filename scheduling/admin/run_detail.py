"""A Run's spec and status as an operator reads them: source, mode, affinity, timeline."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from portal.machinery.conditions import time_or_none
from portal.machinery.registry import registry
from portal.resource_admin import (
    NONE,
    badge,
    code_list,
    compact,
    condition_list,
    find_object,
    human_duration,
    link_to,
    selector_text,
    simple_table,
    timestamp,
)
from portal.resource_admin.render import condition_tone, failure_reason

from .common import capacity_text

AFFINITY_KINDS = ("runAffinity", "runAntiAffinity")
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
TIMELINE_CONDITIONS = ("Scheduled", "Running", "Ready", "Completed")


def as_dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def source_summary(source: Any) -> SafeString:
    source = as_dict(source)
    if not source:
        return NONE
    if "inline" in source:
        path = source.get("inlinePath")
        note = format_html(' <span class="k-muted">as</span> <code>{}</code>', path) if path else ""
        return format_html(
            '<strong>inline</strong>{}<pre class="k-yaml">{}</pre>',
            note,
            compact(source.get("inline")),
        )
    commit = source.get("commitSHA")
    return format_html(
        "<strong>repo</strong> <code>{}</code>{}",
        compact(source.get("repoURL")),
        format_html(' <span class="k-muted">at</span> <code>{}</code>', commit) if commit else "",
    )


def mode_summary(mode: Any) -> SafeString:
    mode = as_dict(mode)
    if "task" in mode:
        task = as_dict(mode["task"])
        parts = [format_html("<strong>{}</strong>", "task")]
        if task.get("entrypoint"):
            parts.append(
                format_html(
                    '<span class="k-muted">entrypoint</span> <code>{}</code>', task["entrypoint"]
                )
            )
        if task.get("args"):
            parts.append(
                format_html('<span class="k-muted">args</span> {}', code_list(task["args"]))
            )
        return format_html_join(" ", "{}", ((p,) for p in parts))
    if "function" in mode:
        function = as_dict(mode["function"])
        parts = [format_html("<strong>{}</strong>", "function")]
        if function.get("handler"):
            parts.append(
                format_html(
                    '<span class="k-muted">handler</span> <code>{}</code>', function["handler"]
                )
            )
        if function.get("idleTimeoutSeconds") is not None:
            parts.append(
                format_html(
                    '<span class="k-muted">idle timeout</span> {}s', function["idleTimeoutSeconds"]
                )
            )
        return format_html_join(" ", "{}", ((p,) for p in parts))
    return format_html("{}", compact(mode)) if mode else NONE


def env_names(env: Any) -> SafeString:
    if not isinstance(env, list) or not env:
        return NONE
    names = [e.get("name") if isinstance(e, dict) else compact(e) for e in env]
    return format_html('{} <span class="k-muted">(values in the YAML)</span>', code_list(names))


def affinity_table(affinity: Any) -> SafeString:
    rows = []
    for kind in AFFINITY_KINDS:
        rules = as_dict(as_dict(affinity).get(kind))
        for term in rules.get(REQUIRED) or []:
            term = as_dict(term)
            rows.append(
                (
                    kind,
                    "required",
                    format_html("<code>{}</code>", selector_text(term.get("labelSelector"))),
                    compact(term.get("topologyKey")),
                )
            )
        for weighted in rules.get(PREFERRED) or []:
            weighted = as_dict(weighted)
            term = as_dict(weighted.get("runAffinityTerm"))
            rows.append(
                (
                    kind,
                    f"preferred (weight {compact(weighted.get('weight'))})",
                    format_html("<code>{}</code>", selector_text(term.get("labelSelector"))),
                    compact(term.get("topologyKey")),
                )
            )
    if not rows:
        return NONE
    return simple_table(("rule", "when", "Runs matching", "topology"), rows)


def workspace_summary(workspace: Any, namespace: str, site) -> SafeString:
    workspace = as_dict(workspace)
    if not workspace:
        return NONE
    name = compact(workspace.get("name"))
    kind_name = compact(workspace.get("kind")) or "PersistentWorkspace"
    kind = registry.for_manifest(compact(workspace.get("apiGroup")), kind_name)
    target = find_object(kind, namespace, name)
    text = f"{kind_name}/{name}"
    if target is None:
        return format_html('{} <span class="k-muted">(not found)</span>', text)
    return link_to(target, text, site)


def requests_summary(spec: dict) -> str:
    requests = as_dict(as_dict(spec.get("resources")).get("requests"))
    return capacity_text(requests or {"runs": 1})


def run_condition_tone(finished: bool):
    """What a Run's conditions mean: True is green (red when it carries the failure reason);
    False is a stage not reached: waiting (amber) while the Run is unfinished, neutral (grey)
    once it has ended: a finished Run is no longer Running, and that is no failure."""

    def tone(cond: dict, failed: str) -> str:
        state = compact(cond.get("status")) or "Unknown"
        if state == "False":
            return "unknown" if finished else "pending"
        return condition_tone(state, cond.get("reason"), failed)

    return tone


def timeline(obj: Any) -> SafeString:
    """Creation, each condition's transition, start and completion, with the time since
    creation: where a Run spent its time."""
    created = obj.creation_timestamp
    status = as_dict(obj.status)
    failed = failure_reason(status)
    tone = run_condition_tone(bool(getattr(obj, "is_terminal", False)))
    events: list[tuple[datetime | None, str, Any, str]] = []
    for cond in condition_list(status):
        ctype = compact(cond.get("type"))
        if ctype not in TIMELINE_CONDITIONS:
            continue
        state = compact(cond.get("status")) or "Unknown"
        events.append(
            (
                time_or_none(cond.get("lastTransitionTime")),
                ctype,
                badge(state, tone(cond, failed)),
                compact(cond.get("reason")),
            )
        )
    for field, label in (("startTime", "started"), ("completionTime", "completed")):
        if status.get(field):
            events.append((time_or_none(status[field]), label, "", ""))
    # status times have whole seconds: order (and measure) at that precision, Created first
    origin = created.replace(microsecond=0) if created else None
    events.sort(key=lambda e: (e[0] is None, e[0] or origin))
    rows = []
    for when, event, state, reason in [(created, "Created", "", ""), *events]:
        after = human_duration(max(0.0, (when - origin).total_seconds())) if when and origin else ""
        rows.append(
            (event, state, reason, timestamp(when) if when else "?", f"+{after}" if after else "")
        )
    return simple_table(("event", "status", "reason", "time", "after creation"), rows)
