"""The names of the scheduling app's control-plane Celery tasks (those runtimed sends or
receives are in ``runtimed.protocol``): the decorators, the beat schedule and every sender use
these, so ``triggers`` and ``lifecycle`` send tasks by name instead of importing ``tasks``."""

RECONCILE = "scheduling.reconcile"
COLLECT_RUNS = "scheduling.collect_runs"
