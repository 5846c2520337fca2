"""HTML pieces of the jobclasses admin pages, tolerant of any stored JSON shape: conditions
with their reasons, the resource policy and effective resources as tables, the namespaces a
selector admits, a Job's steps and its log tail, the parameter kinds' specs.

Nothing here reads a Secret: an OpenSandbox API key is shown only as its reference
(namespace/name/key).
"""

from __future__ import annotations

from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from portal.machinery.conditions import time_or_none
from portal.machinery.labels import LabelSelectorError, compile_selector
from portal.resource_admin import (
    NONE,
    badge,
    compact,
    elapsed,
    label_chips,
    simple_table,
    timestamp,
)
from portal.resource_admin.render import condition_tone, phase_tone

from . import status as job_status

POLICY_ROWS = ("defaults", "minimum", "maximum")
RESOURCE_COLUMNS = (
    ("requests", "cpu"),
    ("requests", "memory"),
    ("limits", "cpu"),
    ("limits", "memory"),
)
DASH = mark_safe('<span class="k-muted">—</span>')


def as_dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def muted(text: str) -> SafeString:
    return format_html('<span class="k-muted">{}</span>', text)


# ------------------------------------------------------------------------------ conditions


def condition_cell(status: Any, ctype: str) -> SafeString:
    """``True Accepted`` as a badge and its reason; the message in the tooltip."""
    cond = job_status.condition(as_dict(status), ctype)
    if not cond:
        return badge("?", "unknown", f"no {ctype} condition yet (not reconciled)")
    state = compact(cond.get("status")) or "Unknown"
    reason = compact(cond.get("reason"))
    title = f"{ctype}={state}" + (f" ({reason})" if reason else "")
    message = compact(cond.get("message"))
    if message:
        title += f": {message[:300]}"
    return format_html(
        '{} <span title="{}">{}</span>',
        badge(state, condition_tone(state), title),
        title,
        reason,
    )


def condition_detail(status: Any, ctype: str, generation: Any) -> SafeString:
    """Status, reason, message and observedGeneration against the object's generation."""
    cond = job_status.condition(as_dict(status), ctype)
    if not cond:
        return muted(f"no {ctype} condition yet: the controller has not reconciled it")
    state = compact(cond.get("status")) or "Unknown"
    observed = cond.get("observedGeneration")
    stale = isinstance(observed, int) and isinstance(generation, int) and observed < generation
    generation_note = (
        badge(
            "stale",
            "warn",
            f"observedGeneration {observed} is older than metadata.generation {generation}: "
            "the controller has not seen the latest spec",
        )
        if stale
        else ""
    )
    return format_html(
        "{} <b>{}</b> {}<br><span class='k-muted'>observedGeneration {} of generation {}"
        "; since {}</span> {}",
        badge(state, condition_tone(state)),
        compact(cond.get("reason")),
        format_html('<span class="k-pre">{}</span>', compact(cond.get("message"))),
        compact(observed) or "?",
        compact(generation),
        compact(cond.get("lastTransitionTime")) or "?",
        generation_note,
    )


# ------------------------------------------------------------------------------ resources


def _quantity(requirements: Any, section: str, resource: str) -> Any:
    value = as_dict(as_dict(requirements).get(section)).get(resource)
    return format_html("<code>{}</code>", compact(value)) if value is not None else DASH


def policy_table(policy: Any) -> SafeString:
    """defaults / minimum / maximum × requests / limits × cpu / memory."""
    policy = as_dict(policy)
    if not policy:
        return muted("none: a Job's resources are taken as given, unbounded")
    rows = [
        (row, *(_quantity(policy.get(row), section, res) for section, res in RESOURCE_COLUMNS))
        for row in POLICY_ROWS
    ]
    headers = ("", *(f"{section} {res}" for section, res in RESOURCE_COLUMNS))
    return simple_table(headers, rows)


def requirements_table(requirements: Any) -> SafeString:
    """requests / limits × cpu / memory."""
    requirements = as_dict(requirements)
    if not requirements:
        return NONE
    rows = [
        (
            section,
            _quantity(requirements, section, "cpu"),
            _quantity(requirements, section, "memory"),
        )
        for section in ("requests", "limits")
    ]
    return simple_table(("", "cpu", "memory"), rows)


# ------------------------------------------------------------------------------ namespaces


def admitted_namespaces(selector: Any, namespaces: list[Any]) -> tuple[list[Any], str]:
    """(the namespaces ``allowedNamespaces`` admits now, an error when it cannot be read)."""
    if selector is None:
        return list(namespaces), ""
    try:
        compiled = compile_selector(selector, "allowedNamespaces")
    except LabelSelectorError as exc:
        return [], exc.message
    return [ns for ns in namespaces if compiled.matches(as_dict(ns.labels))], ""


# ------------------------------------------------------------------------------ Job status


def duration_between(start: Any, end: Any) -> str:
    started, finished = time_or_none(start), time_or_none(end)
    if started is None or finished is None:
        return ""
    return elapsed(max((finished - started).total_seconds(), 0))


def steps_table(steps: Any) -> SafeString:
    rows = []
    for step in as_list(steps):
        step = as_dict(step)
        state = compact(step.get("status")) or "Pending"
        exit_code = step.get("exitCode")
        rows.append(
            (
                format_html("<code>{}</code>", compact(step.get("name"))),
                badge(state, phase_tone(state)),
                compact(exit_code) if exit_code is not None else DASH,
                compact(step.get("startedAt")) or DASH,
                compact(step.get("finishedAt")) or DASH,
                duration_between(step.get("startedAt"), step.get("finishedAt")) or DASH,
            )
        )
    if not rows:
        return muted("none yet: the steps are reported once the execution runs")
    return simple_table(("step", "status", "exit code", "started", "finished", "duration"), rows)


def log_block(text: str, limit_bytes: int, api_url: str) -> SafeString:
    api_link = format_html(
        '<a href="{}">{}</a> <span class="k-muted">(the whole log: add ?follow=true to stream '
        "it, ?limitBytes=N for a tail)</span>",
        api_url,
        api_url,
    )
    if not text:
        return format_html(
            "{}<br>{}", muted("no log yet (no execution, or nothing written)"), api_link
        )
    cut = len(text.encode()) >= limit_bytes
    note = muted(f"the last {limit_bytes} bytes") if cut else ""
    return format_html('{} {}<pre class="k-yaml">{}</pre>', api_link, note, text)


def time_cell(value: Any) -> SafeString:
    moment = time_or_none(value)
    return format_html("{}", timestamp(moment)) if moment is not None else NONE


# ------------------------------------------------------------------------------ parameters


def key_values(values: Any) -> SafeString:
    values = as_dict(values)
    if not values:
        return NONE
    rows = [
        (
            format_html("<code>{}</code>", key),
            format_html('<span class="k-pre">{}</span>', compact(v)),
        )
        for key, v in sorted(values.items())
    ]
    return simple_table(("field", "value"), rows)


def flag(value: Any) -> SafeString:
    return badge("true", "warn") if value is True else muted("false")


def secret_reference(ref: Any) -> SafeString:
    """``namespace/name`` key ``key``: the reference only, never the Secret's content."""
    ref = as_dict(ref)
    if not ref:
        return NONE
    return format_html(
        "Secret <code>{}/{}</code> key <code>{}</code> "
        "<span class='k-muted'>(the value is never shown here)</span>",
        compact(ref.get("namespace")),
        compact(ref.get("name")),
        compact(ref.get("key")),
    )


def tolerations_table(tolerations: Any) -> SafeString:
    rows = [
        tuple(
            compact(as_dict(t).get(f))
            for f in ("key", "operator", "value", "effect", "tolerationSeconds")
        )
        for t in as_list(tolerations)
    ]
    if not rows:
        return NONE
    return simple_table(("key", "operator", "value", "effect", "seconds"), rows)


def spec_rows(rows: list[tuple[str, Any]]) -> SafeString:
    """A spec as (field, rendered value) lines."""
    return simple_table(
        ("field", "value"), [(format_html("<code>{}</code>", f), v) for f, v in rows]
    )


def kubernetes_spec(spec: dict) -> SafeString:
    scheduling = as_dict(spec.get("scheduling"))
    return spec_rows(
        [
            ("serviceAccountName", compact(spec.get("serviceAccountName")) or NONE),
            ("runtimeClassName", compact(spec.get("runtimeClassName")) or NONE),
            ("imagePullPolicy", compact(spec.get("imagePullPolicy")) or muted("(the cluster's)")),
            ("scheduling.nodeSelector", label_chips(scheduling.get("nodeSelector")) or NONE),
            ("scheduling.tolerations", tolerations_table(scheduling.get("tolerations"))),
            ("podSecurityContext", key_values(spec.get("podSecurityContext"))),
        ]
    )


def opensandbox_spec(spec: dict) -> SafeString:
    return spec_rows(
        [
            ("endpoint", format_html("<code>{}</code>", compact(spec.get("endpoint")))),
            ("apiKeySecretRef", secret_reference(spec.get("apiKeySecretRef"))),
            ("poolRef", compact(spec.get("poolRef")) or NONE),
            ("requestMapping", compact(spec.get("requestMapping")) or "AdmissionOnly"),
            ("allowSecretEnv", flag(spec.get("allowSecretEnv"))),
            ("allowImageAuth", flag(spec.get("allowImageAuth"))),
            ("allowInsecureHTTP", flag(spec.get("allowInsecureHTTP"))),
        ]
    )


def local_spec(spec: dict, work_root: str) -> SafeString:
    root = compact(spec.get("workRoot"))
    return spec_rows(
        [
            (
                "workRoot",
                format_html("<code>{}</code>", root)
                if root
                else format_html(
                    "{} <code>{}</code>", muted("not set: the data directory,"), work_root
                ),
            ),
            ("maxConcurrentJobs", compact(spec.get("maxConcurrentJobs") or 4)),
        ]
    )


def names_html(items: list[SafeString]) -> SafeString:
    return format_html_join(", ", "{}", ((item,) for item in items)) if items else NONE
