"""Signals the scheduling app sends for apps built on it (it imports none of them).

``run_phase_changed(run=..., phase=...)``: a Run's status moved to another phase (one
``run_status.write``; the batched bind, Pending -> Scheduled, sends none). ``run`` is what the
writer held: a Run row, or the scheduler's PendingRun (namespace, name, uid, labels).

``runtime_pods_changed(namespace=...)``: Runtime Pods of that namespace (None: any) appeared,
became ready, stopped being ready or went away. Sent inside the transaction that changed them;
receivers schedule their work on commit.
"""

from django.dispatch import Signal

runtime_pods_changed = Signal()
run_phase_changed = Signal()
