"""Which JobClass a Job uses (seed 003, "default class selection").

``spec.jobClassName`` always wins. Without it: the Job namespace's
``execution.ayatori.ddupan.top/default-job-class`` annotation, then the one JobClass annotated
``execution.ayatori.ddupan.top/is-default-job-class: "true"``. None is
``NoDefaultJobClass``; several are ``AmbiguousDefaultJobClass`` (and a platform warning),
never "the newest": isolation must not depend on creation time. A class being deleted takes
no new Job.

The Job controller runs this once: the result is frozen in ``status.resolvedJobClass``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from . import metrics
from .models import NAMESPACE_DEFAULT_ANNOTATION, JobClass

log = logging.getLogger(__name__)

NO_DEFAULT = "NoDefaultJobClass"
AMBIGUOUS_DEFAULT = "AmbiguousDefaultJobClass"
NOT_FOUND = "JobClassNotFound"
TERMINATING = "JobClassTerminating"


@dataclass(frozen=True)
class Resolution:
    job_class: JobClass | None
    reason: str = ""
    message: str = ""


def _named(name: str, how: str) -> Resolution:
    job_class = JobClass.objects.filter(name=name).first()
    if job_class is None:
        return Resolution(None, NOT_FOUND, f"JobClass {name} ({how}) not found")
    if job_class.deletion_timestamp is not None:
        return Resolution(None, TERMINATING, f"JobClass {name} ({how}) is being deleted")
    return Resolution(job_class)


def resolve(requested: str, namespace_annotations: dict | None) -> Resolution:
    if requested:
        return _named(requested, "spec.jobClassName")
    namespace_default = (namespace_annotations or {}).get(NAMESPACE_DEFAULT_ANNOTATION)
    if namespace_default:
        return _named(namespace_default, f"the namespace's {NAMESPACE_DEFAULT_ANNOTATION}")
    defaults = list(
        JobClass.objects.filter(is_default=True, deletion_timestamp__isnull=True).order_by("name")
    )
    metrics.DEFAULT_CLASSES.set(len(defaults))
    if not defaults:
        return Resolution(
            None,
            NO_DEFAULT,
            "spec.jobClassName is not set and there is no default JobClass (annotate one "
            'execution.ayatori.ddupan.top/is-default-job-class: "true", or the namespace '
            f"{NAMESPACE_DEFAULT_ANNOTATION})",
        )
    if len(defaults) > 1:
        names = ", ".join(c.name for c in defaults)
        log.warning("several JobClasses are the global default (%s): Jobs without one wait", names)
        return Resolution(
            None,
            AMBIGUOUS_DEFAULT,
            f"{len(defaults)} JobClasses are annotated as the default ({names}): "
            "set spec.jobClassName, or leave exactly one default",
        )
    return Resolution(defaults[0])
