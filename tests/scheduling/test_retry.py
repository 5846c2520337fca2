"""spec.retryPolicy: which failures get another attempt, and the backoff before it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from scheduling import retry


def policy(**retry_policy) -> dict:
    return {"retryPolicy": retry_policy}


@pytest.mark.parametrize(
    ("spec", "reason", "attempt", "expected"),
    [
        ({}, "PodGone", 1, False),  # no retryPolicy: one attempt
        (policy(maxAttempts=3), "PodGone", 1, True),
        (policy(maxAttempts=3), "PodGone", 2, True),
        (policy(maxAttempts=3), "PodGone", 3, False),  # maxAttempts counts every attempt
        (policy(maxAttempts=3), "ExecutionLost", 1, True),
        (policy(maxAttempts=3), "RuntimeError", 1, True),
        (policy(maxAttempts=3), "PodTerminating", 1, True),
        (policy(maxAttempts=3), "PodUnhealthy", 1, True),
        (policy(maxAttempts=3), "RuntimeExecute", 1, False),  # the step's own failure: opt-in
        (policy(maxAttempts=3), "Timeout", 1, False),
        (policy(maxAttempts=3, retryableReasons=["RuntimeExecute"]), "RuntimeExecute", 1, True),
        (policy(maxAttempts=3, retryableReasons=["RuntimeExecute"]), "PodGone", 1, False),
        (policy(maxAttempts=3, retryableReasons=["Timeout"]), "Timeout", 2, True),
        # never, even when listed: the same step cannot fix these
        (policy(maxAttempts=5, retryableReasons=["OutputsInvalid"]), "OutputsInvalid", 1, False),
        (policy(maxAttempts=5, retryableReasons=["OutputsTooLarge"]), "OutputsTooLarge", 1, False),
        (policy(maxAttempts=5, retryableReasons=["ArtifactInvalid"]), "ArtifactInvalid", 1, False),
        (policy(maxAttempts=5, retryableReasons=["Cancelled"]), "Cancelled", 1, False),
        # a spec problem found on the pod is terminal
        (policy(maxAttempts=3), "PrepareSource", 1, False),
        (policy(maxAttempts=5, retryableReasons=["PrepareSource"]), "PrepareSource", 1, False),
    ],
)
def test_should_retry(spec, reason, attempt, expected):
    assert retry.should_retry(spec, reason, attempt, cancel_requested=False) is expected


def test_a_cancel_request_stops_retries():
    spec = policy(maxAttempts=3)
    assert not retry.should_retry(spec, "PodGone", 1, cancel_requested=True)


@pytest.mark.parametrize(
    ("backoff", "attempt", "seconds"),
    [
        (None, 1, 10),
        (None, 2, 20),
        (None, 3, 40),
        (None, 4, 60),
        (None, 9, 60),
        ("1s", 1, 1),
        ("1s", 2, 2),
        ("1s", 3, 4),
        ("1s", 6, 32),
        ("1s", 7, 60),
        ("1s", 99, 60),
        ("250ms", 1, 0.25),
        ("250ms", 3, 1),
        ("45s", 2, 60),
        ("2m", 1, 60),
        ("0s", 5, 0),
    ],
)
def test_backoff_doubles_and_is_capped_at_60s(backoff, attempt, seconds):
    spec = policy(maxAttempts=100, **({} if backoff is None else {"backoff": backoff}))
    assert retry.backoff(spec, attempt) == timedelta(seconds=seconds)
