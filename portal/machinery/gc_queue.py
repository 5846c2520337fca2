"""Wake the garbage collector: its work queue ``gc`` holds one key per owner, the owner's UID.

The store adds a key in the deleting transaction: an owner with dependents that is deleted (or
starts deleting in the foreground), and each owner of a deleted dependent (a foreground owner
may go once its last dependent is gone). The handler (``portal.tasks.collect_owner_key``)
collects one owner at a time, as Kubernetes' garbage collector takes one item of its
attemptToDelete queue; beat's pass adds the keys of every gone or foreground-deleting owner."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from . import workqueue

QUEUE = "gc"


def request_owners(uids: Iterable[Any]) -> int:
    """Have the dependents of these owners collected, and a foreground owner released."""
    return workqueue.add_many(QUEUE, (str(uid) for uid in uids))
