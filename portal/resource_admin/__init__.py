"""The shared admin of every Kubernetes-shaped kind (see ``base.ResourceAdmin``).

Modules: ``render`` (HTML helpers), ``cells`` (list columns), ``filters`` (list filters and
label search), ``forms`` (the YAML manifest form), ``detail`` (the read-only detail page) and
``actions`` (Kubernetes-style deletion and force-finalize).
"""

from portal.machinery.humanize import elapsed

from .base import ResourceAdmin
from .filters import LabelFilter, TerminatingFilter, filter_by_label
from .forms import ManifestForm, editable_manifest, skeleton_manifest
from .render import (
    NONE,
    admin_change_url,
    age,
    badge,
    code_list,
    compact,
    condition_badges,
    condition_list,
    find_object,
    human_duration,
    label_chips,
    link_to,
    selector_text,
    simple_table,
    timestamp,
)

__all__ = [
    "NONE",
    "LabelFilter",
    "ManifestForm",
    "ResourceAdmin",
    "TerminatingFilter",
    "admin_change_url",
    "age",
    "badge",
    "code_list",
    "compact",
    "condition_badges",
    "condition_list",
    "editable_manifest",
    "filter_by_label",
    "find_object",
    "elapsed",
    "human_duration",
    "label_chips",
    "link_to",
    "selector_text",
    "simple_table",
    "skeleton_manifest",
    "timestamp",
]
