"""Admission warnings: what a write was allowed to do but should not have (script injection,
say), told to the writer without refusing the write, as kube-apiserver does (KEP-1693).

A kind's ``warnings`` hooks read a manifest and return texts about it; the store runs them on
every write of the main resource (never a /status write) once it is admitted, and keeps those
the old object did not already have: a warning is given when a problem is written, not again
for each later write that leaves it as it was. The texts go to whatever is ``recording`` the
current request (the API views, the admin form); a write nobody records (a controller's)
computes nothing.

The API answers each as a ``Warning: 299 - "text"`` header, the format kube-apiserver uses and
kubectl prints as ``Warning: text``; as there, at most 4096 characters in all (over that, each
is cut to 256, then the last ones dropped), texts in printable ASCII (anything else is ``?``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .registry import ResourceKind

HEADER = "Warning"
CODE_AND_AGENT = '299 - "'
MAX_TOTAL = 4096
MAX_EACH = 256

_recorded: ContextVar[list[str] | None] = ContextVar("admission_warnings", default=None)


@contextmanager
def recording() -> Iterator[list[str]]:
    """Collect the warnings of the writes made inside the block, in order, each once."""
    texts: list[str] = []
    token = _recorded.set(texts)
    try:
        yield texts
    finally:
        _recorded.reset(token)


def of(kind: ResourceKind, new: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    """The warnings ``new`` holds that ``old`` (if any) did not."""
    found = _run(kind, new)
    if old is not None and found:
        before = set(_run(kind, old))
        found = [text for text in found if text not in before]
    return found


def admit(kind: ResourceKind, new: dict[str, Any], old: dict[str, Any] | None) -> None:
    """The store's step: record the write's warnings, if anyone is recording."""
    texts = _recorded.get()
    if texts is None or not kind.warnings:
        return
    for text in of(kind, new, old):
        if text not in texts:
            texts.append(text)


def _run(kind: ResourceKind, manifest: dict[str, Any]) -> list[str]:
    found: list[str] = []
    for check in kind.warnings:
        found += [text for text in check(manifest) if text not in found]
    return found


def printable(text: str) -> str:
    return "".join(char if " " <= char <= "~" else "?" for char in text)


def limited(texts: Iterable[str]) -> list[str]:
    """kube-apiserver's bound: 4096 characters in all; over it each is cut to 256 characters
    and what still does not fit is left out."""
    kept = [printable(text) for text in texts if text]
    if sum(map(len, kept)) > MAX_TOTAL:
        kept = [text[:MAX_EACH] for text in kept]
    fitting: list[str] = []
    total = 0
    for text in kept:
        total += len(text)
        if total > MAX_TOTAL:
            break
        fitting.append(text)
    return fitting


def quoted(text: str) -> str:
    return CODE_AND_AGENT + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def header_value(texts: Iterable[str]) -> str:
    """One ``Warning`` header holding every warning (a list header: comma separated)."""
    return ", ".join(quoted(text) for text in limited(texts))


def attach(response: Any, texts: list[str]) -> Any:
    if texts:
        response[HEADER] = header_value(texts)
    return response
