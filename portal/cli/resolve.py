"""Resolving what a command acts on: kinds, names and namespaces; and the CLI's write context.

Every write runs with a ``WriteContext`` naming the command's identity (``identity``: ``--as``
or the local operator), through the store's one admission chain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from portal.auth.authorizer import UserInfo
from portal.machinery import store
from portal.machinery.managed_fields import CLI_MANAGER
from portal.machinery.registry import ResourceKind, registry

from .errors import CLIError


def cli_context(user: UserInfo, dry_run: bool = False) -> store.WriteContext:
    return store.WriteContext(user=user, dry_run=dry_run, field_manager=CLI_MANAGER)


def kind_for_manifest(manifest: Any) -> ResourceKind:
    if not isinstance(manifest, dict):
        raise CLIError.client(f"expected a Kubernetes object, got {type(manifest).__name__}")
    api_version, kind_name = manifest.get("apiVersion"), manifest.get("kind")
    missing = [
        f"{key} not set"
        for key, value in (("apiVersion", api_version), ("kind", kind_name))
        if not value
    ]
    if missing:
        raise CLIError.client(f"error validating data: [{', '.join(missing)}]")
    kind = registry.for_manifest(str(api_version), str(kind_name))
    if kind is None:
        raise CLIError.client(f'no kind "{kind_name}" is registered for version "{api_version}"')
    return kind


def kind_for_name(name: str) -> ResourceKind:
    """Any name the registry knows: plural, singular, Kind, short name, ``plural.group``."""
    kind = registry.lookup(name)
    if kind is None:
        raise CLIError.client(f'the server doesn\'t have a resource type "{name}"')
    return kind


def metadata_of(manifest: dict) -> dict:
    meta = manifest.get("metadata")
    return meta if isinstance(meta, dict) else {}


def target_namespace(kind: ResourceKind, manifest: dict, flag: str | None) -> str | None:
    """``-n``, else the manifest's, else ``default``; None for a cluster-scoped kind."""
    if not kind.namespaced:
        return None
    own = metadata_of(manifest).get("namespace") or ""
    if flag and own and own != flag:
        raise CLIError.client(
            f'the namespace from the provided object "{own}" does not match the namespace '
            f"\"{flag}\". You must pass '--namespace={own}' to perform this operation."
        )
    return flag or own or "default"


def request_namespace(kind: ResourceKind, flag: str | None) -> str | None:
    return (flag or "default") if kind.namespaced else None


@dataclass
class ResourceGroup:
    kind: ResourceKind
    names: list[str] = field(default_factory=list)


def parse_resource_args(args: list[str]) -> tuple[list[ResourceGroup], bool]:
    """``KIND[,KIND...] [NAME...]`` or ``KIND/NAME...`` -> (groups, singular).

    ``singular`` is kubectl's rule for printing one object rather than a List: exactly one
    name of one kind was asked for.
    """
    if not args:
        raise CLIError.client("You must specify the type of resource to get.")
    if "/" in args[0]:
        return _slash_groups(args), len(args) == 1
    kinds = [kind_for_name(part) for part in args[0].split(",") if part]
    if not kinds:
        raise CLIError.client("You must specify the type of resource to get.")
    names = args[1:]
    return [ResourceGroup(kind, list(names)) for kind in kinds], len(kinds) == 1 and len(names) == 1


def _slash_groups(args: list[str]) -> list[ResourceGroup]:
    """``KIND/NAME...``: the names grouped per kind, in first-seen order."""
    groups: dict[str, ResourceGroup] = {}
    for arg in args:
        type_name, slash, name = arg.partition("/")
        if not slash or not type_name or not name:
            raise CLIError.client(
                "there is no need to specify a resource type as a separate argument when "
                "passing arguments in resource/name form"
            )
        kind = kind_for_name(type_name)
        groups.setdefault(kind.key, ResourceGroup(kind)).names.append(name)
    return list(groups.values())
