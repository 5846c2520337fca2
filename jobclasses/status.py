"""The one status writer of the jobclasses kinds (JobClass, the parameter kinds, Job): the
conditions bookkeeping and the compare-and-set every controller here uses.

``write`` lands a status at the resourceVersion the object was read at; a stale write loses
and the next pass computes again. A Job write that ends the Job, or that names a class for the
first time, wakes the class controller (its protective finalizer counts non-terminal Jobs).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from portal.machinery import history
from portal.machinery.conditions import get_condition, with_conditions

MESSAGE_LIMIT = 1024


def with_reasons(status: dict, now: datetime, generation: int, **conditions: tuple) -> dict:
    """``status`` with each ``type=(status, reason, message)`` condition set (messages bounded),
    and observedGeneration."""
    bounded = {
        ctype: (cstatus, reason, message[:MESSAGE_LIMIT])
        for ctype, (cstatus, reason, message) in conditions.items()
    }
    new = with_conditions(status, now, generation, bounded)
    new["observedGeneration"] = generation
    return new


def condition(status: dict, ctype: str) -> dict[str, Any]:
    return get_condition((status or {}).get("conditions"), ctype) or {}


def is_true(status: dict, ctype: str) -> bool:
    return condition(status, ctype).get("status") == "True"


def write(obj: Any, status: dict) -> bool:
    """Compare-and-set ``status`` (and the model's status columns) on ``obj``; True if it won."""
    if status == (obj.status or {}):
        return False
    columns_of = getattr(type(obj), "status_columns", None)
    columns = columns_of(status) if columns_of else {}
    before = (getattr(obj, "phase", None), getattr(obj, "job_class", None))
    if not history.compare_and_set(obj, {"status": status, **columns}):
        return False
    after = (getattr(obj, "phase", None), getattr(obj, "job_class", None))
    if hasattr(obj, "job_class") and after[0] != before[0]:
        from .metrics import JOB_TRANSITIONS

        JOB_TRANSITIONS.labels(str(after[0])).inc()
    if hasattr(obj, "job_class") and after != before and obj.job_class:
        from .triggers import request_class_reconcile

        request_class_reconcile(obj.job_class)
    return True
