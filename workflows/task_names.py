"""The names of the workflows app's Celery tasks: senders use these instead of importing tasks."""

RECONCILE = "workflows.reconcile"
