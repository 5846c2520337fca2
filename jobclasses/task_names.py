"""The names of the jobclasses app's Celery tasks: senders use these instead of importing
``tasks``."""

RECONCILE_CLASSES = "jobclasses.reconcile_classes"
RECONCILE_JOB = "jobclasses.reconcile_job"
RECONCILE_JOBS = "jobclasses.reconcile_jobs"
RECONCILE = "jobclasses.reconcile"
