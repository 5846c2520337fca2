"""Signals the scheduling app sends for apps built on it (it imports none of them).

``runtime_pods_changed(namespace=...)``: Runtime Pods of that namespace (None: any) appeared,
became ready, stopped being ready or went away. Sent inside the transaction that changed them;
receivers schedule their work on commit.
"""

from django.dispatch import Signal

runtime_pods_changed = Signal()
