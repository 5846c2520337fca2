"""The names of the jobclasses app's Celery tasks (its controllers run on work queues: see
``triggers``): senders use these instead of importing
``tasks``."""

RECONCILE = "jobclasses.reconcile"
