"""Run garbage collection: ``ttlSecondsAfterFinished`` and the artifact-cleanup finalizer.

Beat runs both as batched, keyset-paged passes that a Celery task re-enqueues while work
remains, so no beat ever runs one unbounded query; a Run deleted, or a deleted Run that ends,
is released at once through the ``run-cleanup`` work queue (``release``, one Run: a store
that fails is retried after the key's backoff). Every new Run carries the
``kruntimes.io/artifact-cleanup`` finalizer: when the Run is deleted, its artifacts are
removed from the store named by ``status.artifactStore`` (the store runtimed actually used)
before the row goes. A Run deleted while it executes is cancelled first; a store that fails
keeps the finalizer and the next pass tries again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.conf import settings

from portal.auth.identities import register_controller
from portal.machinery import store
from portal.machinery.admission import WriteContext
from portal.machinery.errors import StatusError
from portal.machinery.registry import registry
from portal.secrets import MissingReference, secret_data
from runtimed.stores import RunScope, StoreError, build_store
from runtimed.stores.factory import SecretLookup
from scheduling import metrics, run_events
from scheduling.models import ACTIVE_PHASES, Run

log = logging.getLogger(__name__)
ARTIFACT_CLEANUP = "kruntimes.io/artifact-cleanup"
# a function Run's: released once the Run no longer serves anywhere (its attempt unregistered
# the function before it reported its end, or its pod is gone)
FUNCTION_CLEANUP = "kruntimes.io/function-cleanup"


def function_finalizers(manifest: dict) -> tuple[str, ...]:
    spec = manifest.get("spec")
    mode = spec.get("mode") if isinstance(spec, dict) else None
    return (FUNCTION_CLEANUP,) if isinstance(mode, dict) and "function" in mode else ()


# The identities the two passes write with: each may do only its own write.
TTL_CONTROLLER = WriteContext(
    user=register_controller(
        "ttl-after-finished-controller",
        [{"apiGroups": ["kruntimes.io"], "resources": ["runs"], "verbs": ["delete"]}],
    )
)
ARTIFACT_CLEANUP_CONTROLLER = WriteContext(
    user=register_controller(
        "artifact-cleanup-controller",
        [{"apiGroups": ["kruntimes.io"], "resources": ["runs"], "verbs": ["patch"]}],
    )
)


@dataclass
class Progress:
    expired: int = 0  # finished Runs deleted for their TTL
    cleaned: int = 0  # deleted Runs whose artifacts are gone and finalizer released
    waiting: int = 0  # deleted Runs still executing (cancel sent)
    failed: int = 0  # store errors: retried on the next pass
    resume_after: int | None = None  # the last pk looked at when a batch was full


def expire_finished(now: datetime, batch: int, after_pk: int = 0) -> Progress:
    """Delete finished Runs whose ``ttlSecondsAfterFinished`` has passed (one batch).

    The due Runs are read from the ``run_ttl_due`` partial index on ``expires_at``: a pass
    costs the Runs that are due, however many finished Runs wait for a later time."""
    kind = registry.for_model(Run)
    rows = list(
        Run.objects.filter(
            pk__gt=after_pk,
            expires_at__isnull=False,
            expires_at__lte=now,
            deletion_timestamp__isnull=True,
        )
        .order_by("pk")
        .values_list("pk", "namespace", "name")[:batch]
    )
    progress = Progress(resume_after=rows[-1][0] if len(rows) == batch else None)
    for _pk, namespace, name in rows:
        try:
            store.delete(kind, namespace, name, context=TTL_CONTROLLER)
            progress.expired += 1
            metrics.TTL_DELETIONS.inc()
        except StatusError as exc:  # gone meanwhile, or a conflict: the next pass sees it
            log.info("TTL deletion of Run %s/%s skipped: %s", namespace, name, exc)
    return progress


StoreFactory = Callable[..., object]


def namespace_secrets(namespace: str) -> SecretLookup:
    """The Secrets of ``namespace`` from the database, as the store factory reads them."""

    def lookup(name: str) -> dict[str, bytes]:
        try:
            return secret_data(namespace, name)
        except MissingReference as exc:
            raise StoreError(str(exc)) from None
        except StatusError as exc:  # stored data no configured key decrypts
            raise StoreError(exc.message) from None

    return lookup


def run_store(run: Run, store_factory: StoreFactory = build_store):
    """The ArtifactStore the Run's runtimed used (status.artifactStore), or None."""
    snapshot = (run.status or {}).get("artifactStore")
    if not snapshot:
        return None
    return store_factory(
        snapshot,
        volumes_root=Path(settings.KRUNTIMES_ARTIFACT_VOLUMES),
        secrets=namespace_secrets(run.namespace),
    )


def delete_artifacts(run: Run, store_factory: StoreFactory = build_store) -> int:
    """Remove everything the Run stored; 0 when it never had a store. Raises StoreError."""
    artifact_store = run_store(run, store_factory)
    if artifact_store is None:
        return 0
    return artifact_store.delete_run(RunScope(run.namespace, str(run.uid)))


CLEANED, WAITING, FAILED, DEFERRED, NOTHING = "cleaned", "waiting", "failed", "deferred", ""


def release_deleted(
    batch: int, after_pk: int = 0, store_factory: StoreFactory = build_store
) -> Progress:
    """One batch of deleted Runs holding the artifact-cleanup finalizer."""
    runs = list(
        Run.objects.filter(pk__gt=after_pk, deletion_timestamp__isnull=False).order_by("pk")[:batch]
    )
    progress = Progress(resume_after=runs[-1].pk if len(runs) == batch else None)
    for run in runs:
        outcome = release(run, store_factory)
        if outcome == CLEANED:
            progress.cleaned += 1
        elif outcome == WAITING:
            progress.waiting += 1
        elif outcome == FAILED:
            progress.failed += 1
    return progress


def release(run: Run, store_factory: StoreFactory = build_store) -> str:
    """A deleted Run's artifacts deleted and its finalizer released, once it has ended: what
    happened (``CLEANED``; ``WAITING`` while it executes; ``FAILED``: the store refused, an
    Event says so; ``DEFERRED``: it changed meanwhile; ``NOTHING``: not this finalizer's)."""
    if run.deletion_timestamp is None:
        return NOTHING
    if run.phase in ACTIVE_PHASES:  # cancelled on deletion; cleaned once it has ended
        return (
            WAITING if {ARTIFACT_CLEANUP, FUNCTION_CLEANUP} & set(run.finalizers or []) else NOTHING
        )
    if FUNCTION_CLEANUP in (run.finalizers or []):
        try:
            store.remove_finalizer(
                registry.for_model(Run), run, FUNCTION_CLEANUP, context=ARTIFACT_CLEANUP_CONTROLLER
            )
        except StatusError as exc:
            log.info("releasing Run %s/%s deferred: %s", run.namespace, run.name, exc)
            return DEFERRED
        log.info("Run %s/%s: function-cleanup finalizer released", run.namespace, run.name)
        if ARTIFACT_CLEANUP not in (run.finalizers or []):
            return CLEANED
        run.refresh_from_db()
    if ARTIFACT_CLEANUP not in (run.finalizers or []):
        return NOTHING
    try:
        removed = delete_artifacts(run, store_factory)
    except StoreError as exc:
        metrics.ARTIFACT_CLEANUPS.labels("failed").inc()
        log.warning(
            "artifacts of Run %s/%s could not be deleted (will retry): %s",
            run.namespace,
            run.name,
            exc,
        )
        run_events.artifact_cleanup_failed(run)
        return FAILED
    try:
        store.remove_finalizer(
            registry.for_model(Run), run, ARTIFACT_CLEANUP, context=ARTIFACT_CLEANUP_CONTROLLER
        )
    except StatusError as exc:
        log.info("releasing Run %s/%s deferred: %s", run.namespace, run.name, exc)
        return DEFERRED
    log.info(
        "Run %s/%s: %d artifact(s) deleted, finalizer released", run.namespace, run.name, removed
    )
    metrics.ARTIFACT_CLEANUPS.labels("cleaned").inc()
    return CLEANED
