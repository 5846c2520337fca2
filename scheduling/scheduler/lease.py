"""One scheduling loop at a time: a lease row taken by compare-and-set, plus a wake-up flag.

A wake-up that finds the lease held bumps ``requested_at``; the holder lets go only by a
compare-and-set that fails when a request came after its pass started, so it runs another
pass instead: no wake-up is lost and no two loops run at once. The row is created on first
use; the common path is one UPDATE per step.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q

from scheduling.models import SchedulerLease

NAME = "scheduler"


def _ensure_row(name: str) -> None:
    try:
        with transaction.atomic():
            SchedulerLease.objects.get_or_create(name=name)
    except IntegrityError:
        pass  # someone else created it


def _update(name: str, condition: Q, **values: Any) -> bool:
    """UPDATE the lease row where ``condition`` holds; creates the row on first use."""
    if SchedulerLease.objects.filter(condition, name=name).update(**values):
        return True
    if SchedulerLease.objects.filter(name=name).exists():
        return False
    _ensure_row(name)
    return bool(SchedulerLease.objects.filter(condition, name=name).update(**values))


def request_pass(now: datetime, name: str = NAME) -> None:
    _update(name, Q(), requested_at=now)


def acquire(holder: str, now: datetime, ttl: timedelta, name: str = NAME) -> bool:
    free = Q(holder="") | Q(holder=holder) | Q(expires_at__lt=now) | Q(expires_at__isnull=True)
    return _update(name, free, holder=holder, expires_at=now + ttl)


def release(holder: str, name: str = NAME) -> None:
    SchedulerLease.objects.filter(name=name, holder=holder).update(holder="", expires_at=None)


def release_unless_requested(holder: str, since: datetime, name: str = NAME) -> bool:
    """Let go, unless a pass was requested after ``since`` (then keep it: run another)."""
    quiet = Q(requested_at__isnull=True) | Q(requested_at__lte=since)
    return bool(
        SchedulerLease.objects.filter(quiet, name=name, holder=holder).update(
            holder="", expires_at=None
        )
    )
