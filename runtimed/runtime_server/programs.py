"""What a built-in Runtime Server executes for an ``ExecuteRequest``: the argv of the step.

bash keeps the reading of kruntimes' bash Runtime (:mod:`runtimed.command`). Python runs the
entrypoint file (an absolute staged script, or a path in the working directory, default
``main.py``) with this interpreter and the args; without a file, one arg is inline source
(``python -c <source> <args…>``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from .. import command
from ..staging import PrepareError

PYTHON_ENTRYPOINT = "main.py"

Program = Callable[[Path, str, tuple[str, ...]], tuple[str, ...]]


def bash(cwd: Path, entrypoint: str, args: tuple[str, ...]) -> tuple[str, ...]:
    script = Path(entrypoint) if entrypoint and Path(entrypoint).is_absolute() else None
    return command.build(script, cwd, entrypoint or None, args)


def python(cwd: Path, entrypoint: str, args: tuple[str, ...]) -> tuple[str, ...]:
    if entrypoint and Path(entrypoint).is_absolute():
        return (sys.executable, entrypoint, *args)
    path = cwd / command.resolve_entrypoint(entrypoint or PYTHON_ENTRYPOINT)
    if path.is_file():
        return (sys.executable, str(path), *args)
    if entrypoint:
        raise PrepareError(f"entrypoint {entrypoint!r} is not a file in the working directory")
    if not args:
        raise PrepareError(command.NOTHING_TO_RUN)
    return (sys.executable, "-c", args[0], *args[1:])


BUILT_IN: dict[str, Program] = {"bash": bash, "python": python}
