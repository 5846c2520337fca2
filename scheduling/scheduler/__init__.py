"""The scheduler framework: one loop at a time, a single-Run queue, and plugins at
PreFilter, Filter, Score, Reserve/Assume and Bind. Workflow-agnostic by construction."""

from .bind import PodLedger
from .cycle import PassOptions, PassResult, run_pass
from .framework import Decision, Framework, Plugin, Verdict, pending_message
from .parking import Parking
from .plugins import default_plugins


def default_framework() -> Framework:
    from django.conf import settings

    framework = Framework(
        default_plugins(),
        percentage_of_pods_to_score=settings.KRUNTIMES_SCHEDULER_PERCENTAGE_OF_PODS_TO_SCORE,
        min_pods_to_score=settings.KRUNTIMES_SCHEDULER_MIN_PODS_TO_SCORE,
    )
    framework.parking = Parking()
    framework.ledger = PodLedger()
    if settings.KRUNTIMES_SCHEDULER_USAGE_CACHE:
        from .pod_cache import PodCache
        from .usage_cache import UsageCache

        framework.usage_cache = UsageCache(
            settings.KRUNTIMES_SCHEDULER_CACHE_RESYNC_SECONDS,
            freeze=settings.KRUNTIMES_SCHEDULER_GC_FREEZE,
        )
        framework.pod_cache = PodCache(settings.KRUNTIMES_SCHEDULER_CACHE_RESYNC_SECONDS)
    return framework


__all__ = [
    "Decision",
    "Framework",
    "PassOptions",
    "PassResult",
    "Plugin",
    "Verdict",
    "default_framework",
    "default_plugins",
    "pending_message",
    "run_pass",
]
