"""The scheduler lease: one loop at a time, and no wake-up lost while a loop runs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.models import SchedulerLease
from scheduling.scheduler import lease

pytestmark = pytest.mark.django_db
TTL = timedelta(seconds=60)


def test_the_row_is_created_on_first_use_and_one_holder_at_a_time():
    now = timezone.now()
    assert not SchedulerLease.objects.exists()
    assert lease.acquire("a", now, TTL)
    assert SchedulerLease.objects.count() == 1
    assert not lease.acquire("b", now, TTL)
    assert lease.acquire("a", now, TTL)  # the holder renews


def test_an_expired_lease_is_taken_over():
    now = timezone.now()
    lease.acquire("a", now, TTL)
    assert not lease.acquire("b", now + TTL - timedelta(seconds=1), TTL)
    assert lease.acquire("b", now + TTL + timedelta(seconds=1), TTL)


def test_the_holder_keeps_the_lease_when_a_pass_was_requested_during_its_own():
    started = timezone.now()
    lease.acquire("a", started, TTL)
    lease.request_pass(started + timedelta(milliseconds=5))  # a wake-up while "a" runs
    assert not lease.release_unless_requested("a", started)  # so "a" runs another pass
    assert not lease.acquire("b", started, TTL)
    second = started + timedelta(milliseconds=10)
    assert lease.release_unless_requested("a", second)  # nothing new: it lets go
    assert lease.acquire("b", second, TTL)


def test_a_request_before_the_pass_started_does_not_hold_the_lease():
    now = timezone.now()
    lease.request_pass(now - timedelta(seconds=1))
    lease.acquire("a", now, TTL)
    assert lease.release_unless_requested("a", now)


def test_only_the_holder_releases():
    now = timezone.now()
    lease.acquire("a", now, TTL)
    assert not lease.release_unless_requested("b", now)
    lease.release("b")
    assert not lease.acquire("b", now, TTL)
    lease.release("a")
    assert lease.acquire("b", now, TTL)
