"""One scheduling loop at a time: a lease row taken by compare-and-set, plus a wake-up flag.

A wake-up that finds the lease held only bumps ``requested_at``; the holder sees it and runs
another pass before letting go, so no wake-up is lost and no two loops run at once.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q

from scheduling.models import SchedulerLease

NAME = "scheduler"


def _ensure_row(name: str) -> None:
    if not SchedulerLease.objects.filter(name=name).exists():
        try:
            with transaction.atomic():
                SchedulerLease.objects.create(name=name)
        except IntegrityError:
            pass  # someone else created it


def request_pass(now: datetime, name: str = NAME) -> None:
    _ensure_row(name)
    SchedulerLease.objects.filter(name=name).update(requested_at=now)


def acquire(holder: str, now: datetime, ttl: timedelta, name: str = NAME) -> bool:
    _ensure_row(name)
    free = Q(holder="") | Q(holder=holder) | Q(expires_at__lt=now) | Q(expires_at__isnull=True)
    return bool(SchedulerLease.objects.filter(free, name=name)
                .update(holder=holder, expires_at=now + ttl))


def release(holder: str, name: str = NAME) -> None:
    SchedulerLease.objects.filter(name=name, holder=holder).update(holder="", expires_at=None)


def requested_since(moment: datetime, name: str = NAME) -> bool:
    return SchedulerLease.objects.filter(name=name, requested_at__gt=moment).exists()
