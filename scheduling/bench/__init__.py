"""``manage.py bench scheduler``: how fast the scheduler binds a backlog on the configured
database, how long a pass for one new Run takes, and how far that is from one bulk UPDATE.

Plain functions: ``workload`` sets a namespace up and tears it down, ``measure`` times it.
"""

from .measure import run_scheduler_bench
from .workload import AFFINITY_MODES, Workload

__all__ = ["AFFINITY_MODES", "Workload", "run_scheduler_bench"]
