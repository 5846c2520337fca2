"""What a step executes: kruntimes' built-in bash Runtime's reading of a Run's task mode.

A Run with ``spec.source`` runs its staged script (inline source, or the checkout's
``entrypoint``) with ``mode.task.args`` as its arguments: ``bash <script> <args…>``.

A Run without source is read the way kruntimes' bash Runtime reads it, in the step's working
directory (the Run's workspace):

1. a file at ``entrypoint`` (default ``script``) exists there → ``bash <file> <args…>``;
2. the args spell an explicit shell, ``sh -c …`` or ``bash -c …`` (three args at least) → run
   as given;
3. one arg → ``bash -c <arg>``;
4. several args → ``bash -c`` with the args as the newline-separated lines of one script;
5. no file and no args → :class:`PrepareError` ``no args or script provided`` (the Run fails
   with ``PrepareSource``, which is never retried).

The decision is made after the artifact inputs are staged, so an input may be the script.
"""

from __future__ import annotations

import os
from pathlib import Path

from .staging import PrepareError

DEFAULT_ENTRYPOINT = "script"
NOTHING_TO_RUN = "no args or script provided"
SHELLS = ("sh", "bash")


def resolve_entrypoint(entrypoint: str | None) -> str:
    """``entrypoint`` (default ``script``) cleaned; it must name a path inside the directory."""
    clean = os.path.normpath(entrypoint or DEFAULT_ENTRYPOINT)
    if clean == ".":
        raise PrepareError("entrypoint must reference a file within the workspace")
    if os.path.isabs(clean) or clean == ".." or clean.startswith("../"):
        raise PrepareError("entrypoint must be a relative path within the workspace")
    return clean


def is_explicit_shell(args: tuple[str, ...]) -> bool:
    return len(args) >= 3 and args[0] in SHELLS and args[1] == "-c"


def build(
    script: Path | None, cwd: Path, entrypoint: str | None, args: tuple[str, ...]
) -> tuple[str, ...]:
    """The step's argv; its first item is the program (``bash`` or ``sh``), found on PATH."""
    if script is not None:
        return ("bash", str(script), *args)
    path = cwd / resolve_entrypoint(entrypoint)
    if path.exists():
        return ("bash", str(path), *args)
    if is_explicit_shell(args):
        return args
    if not args:
        raise PrepareError(NOTHING_TO_RUN)
    if len(args) == 1:
        return ("bash", "-c", args[0])
    return ("bash", "-c", "\n".join(args) + "\n")
