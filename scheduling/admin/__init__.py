"""The admin console of the scheduling app: Runtimes, Runs and the Runtime Pods they run on.

Runtime and Run extend the shared ``ResourceAdmin`` (``portal/resource_admin/``); RuntimePod
is not an API kind, so it gets a plain, read-only ``ModelAdmin`` whose one write is the
operator's "Forget pod". Importing this package registers all three.
"""

from . import overview
from .pods import RuntimePodAdmin
from .run import RunAdmin
from .runtime import RuntimeAdmin

overview.register()

__all__ = ["RunAdmin", "RuntimeAdmin", "RuntimePodAdmin"]
