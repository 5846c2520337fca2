"""A Run's data and control settings as an operator reads them: outputs, artifacts in and out,
the store its artifacts went to, retries and the TTL."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.template.defaultfilters import filesizeformat
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from portal.resource_admin import NONE, compact, simple_table, timestamp


def as_dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def outputs_table(status: Any) -> SafeString:
    outputs = as_dict(as_dict(status).get("outputs"))
    if not outputs:
        return NONE
    rows = [
        (
            format_html("<code>{}</code>", key),
            format_html('<span class="k-pre">{}</span>', compact(value)),
        )
        for key, value in sorted(outputs.items())
    ]
    return simple_table(("key", "value"), rows)


def location_text(ref: dict) -> str:
    location = as_dict(ref.get("location"))
    if "s3" in location:
        s3 = as_dict(location["s3"])
        return f"s3://{compact(s3.get('bucket'))}/{compact(s3.get('key'))}"
    filesystem = as_dict(location.get("filesystem"))
    claim = filesystem.get("volumeClaimName")
    return (
        f"{claim}:{compact(filesystem.get('path'))}" if claim else compact(filesystem.get("path"))
    )


def _size(ref: dict) -> str:
    size = ref.get("sizeBytes")
    return filesizeformat(size) if isinstance(size, int) else "—"


def _digest(ref: dict) -> SafeString:
    digest = compact(ref.get("digest"))
    short = digest[:19] + "…" if len(digest) > 20 else digest
    return format_html('<code title="{}">{}</code>', digest, short) if digest else NONE


def artifacts_table(refs: Any, download: Any = None) -> SafeString:
    """The Run's artifacts; ``download(name)`` is the URL of one's bytes, when given."""
    refs = [as_dict(ref) for ref in refs or [] if isinstance(ref, dict)]
    if not refs:
        return NONE

    def name_cell(ref: dict) -> SafeString:
        name = compact(ref.get("name"))
        if download is None or not name:
            return format_html("<strong>{}</strong>", name)
        return format_html(
            '<a href="{}" class="k-artifact-download"><strong>{}</strong></a>', download(name), name
        )

    rows = [
        (
            name_cell(ref),
            compact(ref.get("type")),
            _size(ref),
            _digest(ref),
            format_html("<code>{}</code>", location_text(ref)),
            compact(ref.get("contentType")),
            compact(ref.get("createdAt")),
        )
        for ref in refs
    ]
    return simple_table(
        ("name", "type", "size", "digest", "location", "content type", "created"), rows
    )


def artifact_inputs_table(spec: Any) -> SafeString:
    inputs = [as_dict(item) for item in as_dict(spec).get("artifactInputs") or []]
    if not inputs:
        return NONE
    rows = [
        (
            format_html("<code>{}</code>", compact(item.get("path"))),
            compact(as_dict(item.get("ref")).get("name")),
            compact(as_dict(item.get("ref")).get("type")),
            _size(as_dict(item.get("ref"))),
            format_html("<code>{}</code>", location_text(as_dict(item.get("ref")))),
        )
        for item in inputs
    ]
    return simple_table(("staged at", "artifact", "type", "size", "from"), rows)


def store_summary(status: Any) -> SafeString:
    snapshot = as_dict(as_dict(status).get("artifactStore"))
    if not snapshot:
        return NONE
    driver = compact(snapshot.get("driver"))
    if driver == "s3":
        s3 = as_dict(snapshot.get("s3"))
        where = f"s3://{compact(s3.get('bucket'))}/{compact(s3.get('prefix'))}"
    else:
        where = (
            f"volume claim {compact(as_dict(snapshot.get('filesystem')).get('volumeClaimName'))}"
        )
    return format_html(
        '<strong>{}</strong> <code>{}</code> <span class="k-muted">(what the '
        "artifact-cleanup finalizer deletes from)</span>",
        driver,
        where,
    )


def retry_summary(spec: Any, not_before: datetime | None) -> SafeString:
    policy = as_dict(as_dict(spec).get("retryPolicy"))
    if not policy:
        return mark_safe('<span class="k-muted">no retryPolicy: one attempt</span>')
    reasons = policy.get("retryableReasons") or []
    text = format_html(
        "up to <strong>{}</strong> attempts, backoff {} (doubling, at most 60s), retrying {}",
        policy.get("maxAttempts", 1),
        policy.get("backoff", "10s"),
        ", ".join(reasons) if reasons else "infrastructure failures",
    )
    if not_before is not None:
        text = format_html(
            '{} <br><span class="k-muted">next attempt not before</span> {}',
            text,
            timestamp(not_before),
        )
    return text


def ttl_summary(spec: Any, finished_at: datetime | None, ttl) -> SafeString:
    seconds = as_dict(spec).get("ttlSecondsAfterFinished")
    if seconds is None:
        return mark_safe('<span class="k-muted">kept until deleted</span>')
    if finished_at is None or ttl is None:
        return format_html("deleted {}s after it finishes", seconds)
    return format_html(
        "deleted {}s after it finished: at {}", seconds, timestamp(finished_at + ttl)
    )
