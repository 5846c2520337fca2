"""Which Runtime Server a local Runtime Pod runs, read from the Runtime's pod template as a
cluster reads it: the ``runtime`` container (``template.spec.containers[0]``) is the server.

- with a ``command`` (and ``args``): that program, started by runtimed beside it, listening on
  ``$(KRUNTIME_RUNTIME_ADDRESS)``; a ``python``/``python3`` program is the interpreter runtimed
  itself runs with (the portal's environment, where the contract's stubs are installed);
- otherwise the built-in server its image names: ``…/runtime-python[:tag]`` (or ``python``) is
  the Python one, anything else the bash one (kruntimes' images are ``runtime-bash`` and
  ``runtime-python``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

PYTHON_IMAGES = ("runtime-python", "python")
PYTHON_PROGRAMS = ("python", "python3")


def runtime_container(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return containers[0] if containers and isinstance(containers[0], Mapping) else {}


def builtin_for_image(image: str) -> str:
    name = image.rsplit("/", 1)[-1].split("@", 1)[0].split(":", 1)[0]
    return "python" if name in PYTHON_IMAGES else "bash"


def server_env(spec: Mapping[str, Any]) -> dict[str, str]:
    """runtimed's environment naming the pod's Runtime Server (runtimed.config reads it)."""
    container = runtime_container(spec)
    command = [str(part) for part in container.get("command") or []]
    if command:
        if command[0] in PYTHON_PROGRAMS:
            command[0] = sys.executable
        argv = [*command, *(str(arg) for arg in container.get("args") or [])]
        return {"KRUNTIME_RUNTIME_SERVER_COMMAND": json.dumps(argv)}
    return {"KRUNTIME_RUNTIME_SERVER": builtin_for_image(str(container.get("image") or ""))}
