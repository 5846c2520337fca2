"""Signals the scheduling app sends for apps built on it (it imports none of them).

A Run's changes are not a signal: every change of every kind reaches its kind's watchers
(``ResourceKind.on_change``, added with ``registry.watch``) as its watch event is recorded.

``runtime_pods_changed(namespace=...)``: Runtime Pods of that namespace (None: any) appeared,
became ready, stopped being ready or went away. Sent inside the transaction that changed them;
receivers schedule their work on commit.
"""

from django.dispatch import Signal

runtime_pods_changed = Signal()
