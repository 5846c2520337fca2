"""``manage.py cluster-provider``: the kubernetes provider in the foreground until SIGTERM.

Ensures each live Runtime's Deployment and keeps RuntimePod rows true from a Pod watch
(``scheduling.providers.kubernetes``). ``manage.py up`` runs it as a supervised child when
``KRUNTIMES_CLUSTER=kubernetes``; in a cluster it runs beside every control worker replica,
and only the one holding the ``coordination.k8s.io`` Lease
``KRUNTIMES_PROVIDER_LEASE_NAME`` in ``KRUNTIMES_PROVIDER_LEASE_NAMESPACE`` acts
(``scheduling.providers.leader``; its identity is ``POD_NAME``, else host and pid).
"""

from __future__ import annotations

import logging
import os
import signal
import socket

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from scheduling.providers.kubernetes import KubernetesProvider
from scheduling.providers.leader import LeaseLock


def provider_lease(provider: KubernetesProvider) -> LeaseLock:
    return LeaseLock(
        provider.api,
        namespace=settings.KRUNTIMES_PROVIDER_LEASE_NAMESPACE,
        name=settings.KRUNTIMES_PROVIDER_LEASE_NAME,
        identity=os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}",
        lease_seconds=int(settings.KRUNTIMES_PROVIDER_LEASE_SECONDS),
        request_timeout=provider.timeout,
    )


class Command(BaseCommand):
    help = "Keep Runtime Deployments and RuntimePod rows true against the Kubernetes API."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--once", action="store_true", help="ensure the Deployments, list the Pods, exit"
        )

    def handle(self, *args, once: bool, **options) -> None:
        if settings.KRUNTIMES_CLUSTER != "kubernetes":
            raise CommandError(
                f"KRUNTIMES_CLUSTER is {settings.KRUNTIMES_CLUSTER!r}: the cluster provider "
                "runs with KRUNTIMES_CLUSTER=kubernetes (local pods are manage.py up's)"
            )
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
        if not settings.KRUNTIMES_RUNTIMED_BROKER_SECRET and (
            settings.KRUNTIMES_RUNTIMED_BROKER_URL.startswith("filesystem://")
        ):
            logging.getLogger(__name__).warning(
                "runtimed in a cluster needs a network broker (KRUNTIMES_RUNTIMED_BROKER_URL or "
                "KRUNTIMES_RUNTIMED_BROKER_SECRET), not a filesystem:// one"
            )
        provider = KubernetesProvider()
        if once:
            sweep = provider.sync_once()
            self.stdout.write(
                f"Deployments: {sweep.created} created, {sweep.updated} updated, "
                f"{sweep.deleted} deleted, {sweep.failed} failed; Pods listed"
            )
            return
        previous = {
            s: signal.signal(s, lambda *_: provider.stop()) for s in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            self.stdout.write("cluster provider: watching Runtimes and their Pods")
            provider.run(lease=provider_lease(provider))
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            connections.close_all()
        self.stdout.write("cluster provider: stopped")
