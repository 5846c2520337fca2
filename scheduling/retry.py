"""spec.retryPolicy: whether a failed attempt gets another, and after how long.

A failure is retried when its reason is retryable and attempts remain: ``maxAttempts``
counts every attempt (default 1, no retry). The backoff starts at ``backoff`` (default
10s) and doubles per attempt, capped at 60 s. Without ``retryableReasons`` only failures of
the infrastructure are retried (the pod or runtimed went away); a step's own failure is
retried only when its reason is listed. Outputs and artifact rejections, a spec that cannot be
prepared on the pod (PrepareSource: a source that cannot be fetched, a missing entrypoint)
and cancellation are never retried: running the same step again cannot fix them.
"""

from __future__ import annotations

from datetime import timedelta

from portal.machinery.validation import parse_duration
from runtimed.protocol import Reason

DEFAULT_BACKOFF_SECONDS = 10.0
MAX_BACKOFF_SECONDS = 60.0
# the retry classes, named where runtimed's reasons are
DEFAULT_RETRYABLE_REASONS = Reason.RETRIED_BY_DEFAULT
NEVER_RETRIED = Reason.NEVER_RETRIED


def max_attempts(spec: dict) -> int:
    return int(((spec or {}).get("retryPolicy") or {}).get("maxAttempts") or 1)


def is_retryable(spec: dict, reason: str) -> bool:
    if reason in NEVER_RETRIED:
        return False
    listed = ((spec or {}).get("retryPolicy") or {}).get("retryableReasons")
    return reason in listed if listed else reason in DEFAULT_RETRYABLE_REASONS


def should_retry(spec: dict, reason: str, attempt: int, *, cancel_requested: bool) -> bool:
    """Whether attempt ``attempt`` ending with ``reason`` is followed by attempt + 1."""
    return not cancel_requested and attempt < max_attempts(spec) and is_retryable(spec, reason)


def backoff(spec: dict, attempt: int) -> timedelta:
    """The wait before attempt ``attempt + 1``: backoff × 2^(attempt-1), at most 60 s."""
    raw = ((spec or {}).get("retryPolicy") or {}).get("backoff")
    base = parse_duration(raw) if raw else DEFAULT_BACKOFF_SECONDS
    seconds = min(MAX_BACKOFF_SECONDS, base * 2 ** min(max(attempt - 1, 0), 16))
    return timedelta(seconds=max(seconds, 0.0))
