"""The benchmarks behind ``manage.py bench``: a Django app of the checkout, not of the wheel.

- ``bench scheduler`` (``measure``, ``workload``): how fast the scheduler binds a backlog on the
  configured database, how long a pass for one new Run takes, how far that is from one bulk UPDATE.
- ``bench runs`` (``runs``, ``stack``, ``echo``, ``tracelog``): end-to-end Run latency on real
  processes next to a bare Celery round trip.
- ``bench workflows`` (``workflows``, on ``runs``' machinery): WorkflowRun latency of the demo's
  two-job, four-step Workflow on real processes, and the overhead per step above the child
  Runs' own time.

``portal.settings`` installs this app only when it is importable (a checkout), and no shipped
package imports it (an import-linter contract), so an installed portal carries no bench code.
"""
