"""What the kubectl-like management commands (``apply``, ``get``, ``delete``) share.

The commands in ``portal/management/commands`` only parse arguments and print; this package
reads ``-f`` sources (``sources``), resolves kinds and namespaces (``resolve``), does the
per-object work (``apply``, ``get``, ``delete``) and renders what is printed (``output``).
Every write goes through ``portal.machinery.store``.
"""

from .apply import apply_document, apply_patch, dry_run_suffix
from .delete import (
    PROPAGATION,
    Target,
    delete_target,
    delete_targets,
    targets_from_args,
    targets_from_documents,
)
from .errors import CLIError, status_lines
from .get import fetch
from .identity import add_identity_arguments, identity, identity_of
from .output import (
    OUTPUT_FORMATS,
    abort,
    age,
    as_list,
    cell,
    error_lines,
    format_table,
    human_duration,
    no_resources_message,
    render,
    report,
    table_rows,
)
from .resolve import (
    ResourceGroup,
    cli_context,
    kind_for_manifest,
    kind_for_name,
    parse_resource_args,
    request_namespace,
    target_namespace,
)
from .sources import (
    Document,
    expand_lists,
    is_namespace,
    namespaces_first,
    parse_manifests,
    read_documents,
)

__all__ = [
    "OUTPUT_FORMATS",
    "PROPAGATION",
    "CLIError",
    "Document",
    "ResourceGroup",
    "Target",
    "abort",
    "add_identity_arguments",
    "age",
    "apply_document",
    "apply_patch",
    "as_list",
    "cell",
    "cli_context",
    "delete_target",
    "delete_targets",
    "dry_run_suffix",
    "error_lines",
    "expand_lists",
    "fetch",
    "format_table",
    "human_duration",
    "identity",
    "identity_of",
    "is_namespace",
    "kind_for_manifest",
    "kind_for_name",
    "namespaces_first",
    "no_resources_message",
    "parse_manifests",
    "parse_resource_args",
    "read_documents",
    "render",
    "report",
    "request_namespace",
    "status_lines",
    "table_rows",
    "target_namespace",
    "targets_from_args",
    "targets_from_documents",
]
