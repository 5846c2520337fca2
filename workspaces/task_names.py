"""The names of the workspaces app's control-plane Celery tasks (what runtimed sends or receives
is in ``runtimed.protocol``): senders use these instead of importing ``tasks``."""

RECONCILE = "workspaces.reconcile"
