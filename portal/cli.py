"""What the kubectl-like management commands (``apply``, ``get``, ``delete``) share.

Reading manifests from ``-f`` sources, resolving kinds, applying one manifest, rendering
tables (AGE as kubectl prints it) and YAML/JSON/name output, and printing Status errors the
way kubectl does. The commands in ``portal/management/commands`` only parse arguments and
print. Every write goes through ``portal.machinery.store`` with a ``WriteContext`` whose user
is None: the CLI runs with the operator's database access.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError
from django.utils import timezone

from portal.machinery import store
from portal.machinery.errors import StatusError
from portal.machinery.manifest import to_manifest
from portal.machinery.registry import ResourceKind, registry
from portal.machinery.views import list_objects
from portal.machinery.yaml import dump, load_all

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"
STDIN_SOURCE = "STDIN"  # how kubectl names stdin in messages
# kubectl's tabwriter: minwidth 6, padding 3.
TABLE_PADDING = 3
TABLE_MIN_WIDTH = 6
PROPAGATION = {"background": "Background", "foreground": "Foreground", "orphan": "Orphan",
               "true": "Background", "false": "Orphan"}
OUTPUT_FORMATS = ("yaml", "json", "wide", "name")


class CLIError(Exception):
    """A failure to report: its lines go to stderr (``error: ...`` for client-side ones)."""

    def __init__(self, *lines: str) -> None:
        super().__init__(lines[0] if lines else "")
        self.lines = list(lines)

    @classmethod
    def client(cls, message: str) -> CLIError:
        return cls(f"error: {message}")

    @classmethod
    def from_status(cls, exc: StatusError, doing: str = "", source: str = "") -> CLIError:
        return cls(*status_lines(exc, doing, source))


def status_lines(exc: StatusError, doing: str = "", source: str = "") -> list[str]:
    """``Error from server (Reason): [error when <doing> "<source>": ]message`` plus any cause
    whose field the message does not already name."""
    where = f'error when {doing} "{source}": ' if doing and source else ""
    lines = [f"Error from server ({exc.reason}): {where}{exc.message}"]
    for cause in exc.causes:
        text = f"{cause.field}: {cause.message}" if cause.field else cause.message
        if text not in exc.message:
            lines.append(f"  * {text}")
    return lines


def error_lines(exc: Exception) -> list[str]:
    if isinstance(exc, CLIError):
        return exc.lines
    if isinstance(exc, StatusError):
        return status_lines(exc)
    return [f"error: {exc}"]


def report(stream: Any, exc: Exception) -> None:
    """Write an error's lines to a command's stderr."""
    for line in error_lines(exc):
        stream.write(line)


def abort(stream: Any, exc: Exception, summary: str) -> CommandError:
    """Report the error, and the CommandError (exit status 1) the command raises."""
    report(stream, exc)
    return CommandError(summary, returncode=1)


def cli_context(dry_run: bool = False) -> store.WriteContext:
    return store.WriteContext(user=None, dry_run=dry_run)


# --- reading manifests -----------------------------------------------------------------------


@dataclass
class Document:
    source: str  # the file it came from, or "STDIN"
    manifest: Any


def _source_files(source: str, recursive: bool) -> list[Path]:
    path = Path(source)
    if path.is_dir():
        candidates = path.rglob("*") if recursive else path.iterdir()
        return sorted((p for p in candidates if p.is_file() and p.suffix in MANIFEST_SUFFIXES),
                      key=lambda p: p.as_posix())
    return [path]


def _json_stream(text: str) -> list[Any]:
    """One or more concatenated JSON values (kubectl accepts a JSON stream)."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return values
        value, pos = decoder.raw_decode(text, pos)
        values.append(value)


def parse_manifests(text: str) -> list[Any]:
    """Every non-empty document of a YAML stream or a JSON stream (raises ValueError)."""
    if text.lstrip().startswith(("{", "[")):
        try:
            return [value for value in _json_stream(text) if value is not None]
        except ValueError:
            pass  # YAML is a superset of most JSON: let its parser report the problem
    return load_all(text)


def expand_lists(manifest: Any) -> Iterator[Any]:
    """``kind: List`` (or any ``...List`` with ``items``) yields its items."""
    if isinstance(manifest, dict) and isinstance(manifest.get("items"), list):
        kind_name = manifest.get("kind")
        if isinstance(kind_name, str) and kind_name.endswith("List") and registry.for_manifest(
                str(manifest.get("apiVersion") or ""), kind_name) is None:
            for item in manifest["items"]:
                yield from expand_lists(item)
            return
    yield manifest


def read_documents(sources: Iterable[str], recursive: bool = False
                   ) -> tuple[list[Document], list[str]]:
    """The manifests named by ``-f`` (files, directories, ``-``): (documents, error lines).

    A path that does not exist fails the whole command before anything is read, as kubectl.
    """
    sources = list(sources)
    for source in sources:
        if source != STDIN and not Path(source).exists():
            raise CLIError.client(f'the path "{source}" does not exist')
    documents: list[Document] = []
    problems: list[str] = []
    stdin_text: str | None = None
    for source in sources:
        if source == STDIN:
            if stdin_text is None:
                stdin_text = sys.stdin.read()
            inputs = [(STDIN_SOURCE, stdin_text)]
        else:
            inputs = [(str(path), None) for path in _source_files(source, recursive)]
        for name, text in inputs:
            try:
                text = text if text is not None else Path(name).read_text(encoding="utf-8")
                parsed = parse_manifests(text)
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                problems.append(f"error: error parsing {name}: {exc}")
                continue
            documents += [Document(name, item) for value in parsed for item in expand_lists(value)]
    return documents, problems


def is_namespace(manifest: Any) -> bool:
    return isinstance(manifest, dict) and manifest.get("apiVersion") == "v1" \
        and manifest.get("kind") == "Namespace"


def namespaces_first(documents: list[Document]) -> list[Document]:
    return sorted(documents, key=lambda doc: not is_namespace(doc.manifest))


# --- resolving kinds, names and namespaces ----------------------------------------------------


def kind_for_manifest(manifest: Any) -> ResourceKind:
    if not isinstance(manifest, dict):
        raise CLIError.client(f"expected a Kubernetes object, got {type(manifest).__name__}")
    api_version, kind_name = manifest.get("apiVersion"), manifest.get("kind")
    missing = [f"{key} not set" for key, value in (("apiVersion", api_version),
                                                     ("kind", kind_name)) if not value]
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


def _metadata(manifest: dict) -> dict:
    meta = manifest.get("metadata")
    return meta if isinstance(meta, dict) else {}


def target_namespace(kind: ResourceKind, manifest: dict, flag: str | None) -> str | None:
    """``-n``, else the manifest's, else ``default``; None for a cluster-scoped kind."""
    if not kind.namespaced:
        return None
    own = _metadata(manifest).get("namespace") or ""
    if flag and own and own != flag:
        raise CLIError.client(
            f'the namespace from the provided object "{own}" does not match the namespace '
            f'"{flag}". You must pass \'--namespace={own}\' to perform this operation.')
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
        groups: dict[str, ResourceGroup] = {}
        for arg in args:
            type_name, slash, name = arg.partition("/")
            if not slash or not type_name or not name:
                raise CLIError.client(
                    "there is no need to specify a resource type as a separate argument when "
                    "passing arguments in resource/name form")
            kind = kind_for_name(type_name)
            groups.setdefault(kind.key, ResourceGroup(kind)).names.append(name)
        return list(groups.values()), len(args) == 1
    kinds = [kind_for_name(part) for part in args[0].split(",") if part]
    if not kinds:
        raise CLIError.client("You must specify the type of resource to get.")
    names = args[1:]
    return [ResourceGroup(kind, list(names)) for kind in kinds], len(kinds) == 1 and len(names) == 1


# --- apply -----------------------------------------------------------------------------------


def apply_patch(kind: ResourceKind, manifest: dict) -> dict:
    """The merge patch ``apply`` sends: labels/annotations and the body fields, never status."""
    meta = _metadata(manifest)
    patch = {key: value for key, value in manifest.items()
             if key not in ("apiVersion", "kind", "metadata", kind.status_field)}
    patch_meta = {key: meta[key] for key in ("labels", "annotations") if key in meta}
    if patch_meta:
        patch["metadata"] = patch_meta
    return patch


def apply_document(document: Document, namespace: str | None = None,
                   dry_run: bool = False) -> str:
    """Create or merge one manifest; returns kubectl's line (``<plural>.<group>/<name> ...``).

    ``unchanged`` when merging would not change the live object: nothing is written then, so
    resourceVersion stays put. Raises CLIError carrying the lines to print.
    """
    manifest = document.manifest
    kind = kind_for_manifest(manifest)
    meta = _metadata(manifest)
    name = meta.get("name")
    if not name and meta.get("generateName"):
        raise CLIError.client(f"from {document.source}: cannot use generate name with apply")
    ns = target_namespace(kind, manifest, namespace)
    context = cli_context(dry_run)
    live = None
    if isinstance(name, str) and name:
        try:
            live = store.get_object(kind, ns, name)
        except StatusError as exc:
            if exc.code != 404:
                raise CLIError.from_status(exc) from exc
    if live is None:
        if not kind.namespaced and "namespace" in meta:
            manifest = {**manifest, "metadata": {k: v for k, v in meta.items() if k != "namespace"}}
        try:
            obj = store.create(kind, manifest, namespace=ns, context=context)
        except StatusError as exc:
            raise CLIError.from_status(exc, "creating", document.source) from exc
        return f"{kind.key}/{obj.name} created"
    before = to_manifest(kind, live)
    patch = apply_patch(kind, manifest)
    try:
        # A dry run shows what the merge would make; compare before writing anything.
        preview = store.patch(kind, ns, name, patch, context=cli_context(dry_run=True))
        if to_manifest(kind, preview) == before:
            return f"{kind.key}/{name} unchanged"
        if not dry_run:
            # Precondition: write only onto the version the comparison was made against.
            guarded = {**patch, "metadata": {**patch.get("metadata", {}),
                                             "resourceVersion": before["metadata"]["resourceVersion"]}}
            store.patch(kind, ns, name, guarded, context=context)
    except StatusError as exc:
        raise CLIError.from_status(exc, "patching", document.source) from exc
    return f"{kind.key}/{name} configured"


def dry_run_suffix(mode: str) -> str:
    return {"client": " (dry run)", "server": " (server dry run)"}.get(mode, "")


# --- delete ----------------------------------------------------------------------------------


@dataclass
class Target:
    kind: ResourceKind
    namespace: str | None
    name: str
    source: str = ""  # the -f file it was named in, if any


def targets_from_args(args: list[str], namespace: str | None) -> list[Target]:
    groups, _ = parse_resource_args(args)
    if any(not group.names for group in groups):
        raise CLIError.client("resource(s) were provided, but no name, label selector, or --all "
                              "flag specified")
    return [Target(g.kind, request_namespace(g.kind, namespace), name)
            for g in groups for name in g.names]


def targets_from_documents(documents: list[Document], namespace: str | None
                           ) -> tuple[list[Target], list[str]]:
    """The objects named by manifests, Namespaces last (their content goes first)."""
    targets: list[Target] = []
    problems: list[str] = []
    for doc in documents:
        try:
            kind = kind_for_manifest(doc.manifest)
            name = _metadata(doc.manifest).get("name")
            if not isinstance(name, str) or not name:
                raise CLIError.client(f"from {doc.source}: resource name may not be empty")
            targets.append(Target(kind, target_namespace(kind, doc.manifest, namespace), name,
                                  doc.source))
        except CLIError as exc:
            problems += exc.lines
    targets.sort(key=lambda t: t.kind.group == "" and t.kind.kind == "Namespace")
    return targets, problems


def delete_targets(resources: list[str], filenames: list[str], namespace: str | None,
                   recursive: bool = False) -> tuple[list[Target], list[str]]:
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


def delete_target(target: Target, cascade: str = "background") -> str:
    """Delete one object; kubectl's ``<plural>.<group> "<name>" deleted`` line.

    An object held by finalizers gets its deletionTimestamp and stays; kubectl prints the
    same line for it.
    """
    propagation = PROPAGATION.get(cascade.lower())
    if propagation is None:
        raise CLIError.client(f'invalid cascade value "{cascade}": must be one of '
                              "background, foreground, orphan")
    try:
        store.delete(target.kind, target.namespace, target.name, propagation=propagation,
                     context=cli_context())
    except StatusError as exc:
        raise CLIError.from_status(exc, "deleting" if target.source else "",
                                   target.source) from exc
    return f'{target.kind.key} "{target.name}" deleted'


# --- get -------------------------------------------------------------------------------------


def fetch(group: ResourceGroup, namespace: str | None, all_namespaces: bool,
          selector: str = "") -> tuple[list[Any], list[str]]:
    """The objects of one kind: the named ones, else the list (``-l`` filtered)."""
    if all_namespaces and group.names and group.kind.namespaced:
        raise CLIError.client("a resource cannot be retrieved by name across all namespaces")
    ns = None if all_namespaces else request_namespace(group.kind, namespace)
    if not group.names:
        try:
            items, _ = list_objects(group.kind, ns, {"labelSelector": selector or ""})
        except StatusError as exc:
            raise CLIError.from_status(exc) from exc
        return items, []
    objects, problems = [], []
    for name in group.names:
        try:
            objects.append(store.get_object(group.kind, ns, name))
        except StatusError as exc:
            problems += status_lines(exc)
    return objects, problems


def human_duration(delta: timedelta) -> str:
    """k8s.io/apimachinery ``duration.HumanDuration``: kubectl's AGE (~2-3 significant figures)."""
    seconds = int(delta.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 60 * 2:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def age(timestamp: datetime | None, now: datetime | None = None) -> str:
    if timestamp is None:
        return "<unknown>"
    return human_duration((now or timezone.now()) - timestamp)


def cell(value: Any) -> str:
    if value is None or value == "":
        return "<none>"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        return ",".join(map(str, value)) or "<none>"
    return str(value)


def format_table(rows: list[list[str]]) -> str:
    """Columns padded to their widest cell plus 3 spaces (kubectl's tabwriter); the last
    column is not padded."""
    if not rows:
        return ""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        padded = [text.ljust(max(widths[i] + TABLE_PADDING, TABLE_MIN_WIDTH))
                  for i, text in enumerate(row[:-1])]
        lines.append("".join(padded) + row[-1])
    return "\n".join(lines)


def table_rows(kind: ResourceKind, objects: list[Any], *, all_namespaces: bool = False,
               wide: bool = False, qualify: bool = False, now: datetime | None = None
               ) -> list[list[str]]:
    """Header and rows: [NAMESPACE] NAME <columns> AGE [<wide columns>]."""
    now = now or timezone.now()
    narrow = [c for c in kind.columns if not c.wide]
    extra = [c for c in kind.columns if c.wide] if wide else []
    show_ns = all_namespaces and kind.namespaced
    rows = [(["NAMESPACE"] if show_ns else []) + ["NAME"] + [c.header for c in narrow]
            + ["AGE"] + [c.header for c in extra]]
    for obj in objects:
        name = f"{kind.key}/{obj.name}" if qualify else obj.name
        rows.append(([obj.namespace] if show_ns else []) + [name]
                    + [cell(c.value(obj)) for c in narrow]
                    + [age(obj.creation_timestamp, now)] + [cell(c.value(obj)) for c in extra])
    return rows


def as_list(manifests: list[dict]) -> dict:
    return {"apiVersion": "v1", "items": manifests, "kind": "List",
            "metadata": {"resourceVersion": ""}}


def render(found: list[tuple[ResourceKind, list[Any]]], output: str | None, *,
           singular: bool = False, all_namespaces: bool = False) -> str:
    """``get``'s stdout for the objects found, per kind: a table, YAML, JSON or names."""
    if output in ("yaml", "json"):
        manifests = [to_manifest(kind, obj) for kind, objects in found for obj in objects]
        if singular and not manifests:
            return ""
        data = manifests[0] if singular and len(manifests) == 1 else as_list(manifests)
        return dump(data) if output == "yaml" else json.dumps(data, indent=4) + "\n"
    if output == "name":
        return "".join(f"{kind.key}/{obj.name}\n" for kind, objects in found for obj in objects)
    now = timezone.now()
    qualify = len(found) > 1
    tables = [format_table(table_rows(kind, objects, all_namespaces=all_namespaces,
                                      wide=output == "wide", qualify=qualify, now=now))
              for kind, objects in found if objects]
    return "\n\n".join(tables) + "\n" if tables else ""


def no_resources_message(kinds: list[ResourceKind], namespace: str | None,
                         all_namespaces: bool) -> str:
    if all_namespaces or not any(kind.namespaced for kind in kinds):
        return "No resources found"
    return f"No resources found in {namespace or 'default'} namespace."
