"""``delete``: the objects named by arguments or by ``-f`` manifests, and deleting one."""

from __future__ import annotations

from dataclasses import dataclass

from portal.auth.authorizer import UserInfo
from portal.auth.identities import LOCAL_OPERATOR
from portal.machinery import store
from portal.machinery.errors import StatusError
from portal.machinery.registry import ResourceKind

from .errors import CLIError
from .resolve import (
    cli_context,
    kind_for_manifest,
    metadata_of,
    parse_resource_args,
    request_namespace,
    target_namespace,
)
from .sources import Document, read_documents

PROPAGATION = {
    "background": "Background",
    "foreground": "Foreground",
    "orphan": "Orphan",
    "true": "Background",
    "false": "Orphan",
}


@dataclass
class Target:
    kind: ResourceKind
    namespace: str | None
    name: str
    source: str = ""  # the -f file it was named in, if any


def targets_from_args(args: list[str], namespace: str | None) -> list[Target]:
    groups, _ = parse_resource_args(args)
    if any(not group.names for group in groups):
        raise CLIError.client(
            "resource(s) were provided, but no name, label selector, or --all flag specified"
        )
    return [
        Target(g.kind, request_namespace(g.kind, namespace), name)
        for g in groups
        for name in g.names
    ]


def targets_from_documents(
    documents: list[Document], namespace: str | None
) -> tuple[list[Target], list[str]]:
    """The objects named by manifests, Namespaces last (their content goes first)."""
    targets: list[Target] = []
    problems: list[str] = []
    for doc in documents:
        try:
            kind = kind_for_manifest(doc.manifest)
            name = metadata_of(doc.manifest).get("name")
            if not isinstance(name, str) or not name:
                raise CLIError.client(f"from {doc.source}: resource name may not be empty")
            targets.append(
                Target(kind, target_namespace(kind, doc.manifest, namespace), name, doc.source)
            )
        except CLIError as exc:
            problems += exc.lines
    targets.sort(key=lambda t: t.kind.group == "" and t.kind.kind == "Namespace")
    return targets, problems


def delete_targets(
    resources: list[str], filenames: list[str], namespace: str | None, recursive: bool = False
) -> tuple[list[Target], list[str]]:
    """What ``delete`` removes: ``KIND NAME...``/``KIND/NAME...`` or the objects of ``-f``."""
    if filenames and resources:
        raise CLIError.client("name resources either by argument or with -f, not both")
    if filenames:
        documents, problems = read_documents(filenames, recursive=recursive)
        targets, unresolved = targets_from_documents(documents, namespace)
        return targets, problems + unresolved
    if resources:
        return targets_from_args(resources, namespace), []
    raise CLIError.client("You must provide one or more resources by argument or filename.")


def delete_target(
    target: Target, cascade: str = "background", user: UserInfo = LOCAL_OPERATOR
) -> str:
    """Delete one object; kubectl's ``<plural>.<group> "<name>" deleted`` line.

    An object held by finalizers gets its deletionTimestamp and stays; kubectl prints the
    same line for it.
    """
    propagation = PROPAGATION.get(cascade.lower())
    if propagation is None:
        raise CLIError.client(
            f'invalid cascade value "{cascade}": must be one of background, foreground, orphan'
        )
    try:
        store.delete(
            target.kind,
            target.namespace,
            target.name,
            propagation=propagation,
            context=cli_context(user),
        )
    except StatusError as exc:
        raise CLIError.from_status(exc, "deleting" if target.source else "", target.source) from exc
    return f'{target.kind.key} "{target.name}" deleted'
