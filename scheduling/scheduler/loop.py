"""The scheduling loop: passes while wake-ups keep arriving, run only by the lease holder.

A wake-up that finds the lease held asks the holder for another pass (``lease.request_pass``)
instead of running one beside it; the holder lets go only when no request came during its
last pass. So no wake-up is lost and no two passes ever run at once, on any number of
workers.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from django.utils import timezone

from . import lease
from .cycle import PassOptions, run_pass
from .framework import Framework

LEASE_TTL = timedelta(seconds=60)
MAX_PASSES = 50  # then the lease goes; the next wake-up (or beat) starts a fresh loop

# Called after each pass with the pks of the Runs it bound (dispatching them to their pods).
AfterPass = Callable[[list[int], datetime], object]


def holder_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def schedule_while_requested(
    framework: Framework, after_pass: AfterPass, options: PassOptions | None = None
) -> int:
    """Take the lease (or hand our wake-up to its holder) and run passes until no wake-up
    arrived during the last one; returns how many Runs were bound."""
    holder = holder_name()
    if not lease.acquire(holder, timezone.now(), LEASE_TTL):
        lease.request_pass(timezone.now())  # the holder runs another pass for us
        if not lease.acquire(holder, timezone.now(), LEASE_TTL):  # unless it just let go
            return 0
    bound = 0
    try:
        for _ in range(MAX_PASSES):
            started = timezone.now()
            result = run_pass(framework, started, options)
            bound += result.bound
            after_pass(result.bound_runs, timezone.now())
            if lease.release_unless_requested(holder, started):
                return bound
            lease.acquire(holder, timezone.now(), LEASE_TTL)  # renew for the next pass
    except BaseException:
        lease.release(holder)
        raise
    lease.release(holder)
    return bound
