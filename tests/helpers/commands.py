"""Tests of the kubectl-like management commands; ``run`` calls one and captures its output."""

from __future__ import annotations

import io
from dataclasses import dataclass

from django.core.management import call_command
from django.core.management.base import CommandError

WIDGET_YAML = """\
apiVersion: testing.kruntimes.io/v1
kind: Widget
metadata:
  name: {name}
spec:
  size: {size}
"""


@dataclass
class Result:
    code: int
    out: str
    err: str


def run(command: str, *args: str) -> Result:
    """``manage.py <command> <args>``: exit code (CommandError -> its returncode), stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(command, *args, stdout=out, stderr=err)
        code = 0
    except CommandError as exc:
        code = exc.returncode
    return Result(code, out.getvalue(), err.getvalue())


def widget(name: str, size: int = 1, **extra) -> dict:
    meta = {"name": name, **extra.pop("metadata", {})}
    return {
        "apiVersion": "testing.kruntimes.io/v1",
        "kind": "Widget",
        "metadata": meta,
        "spec": {"size": size, **extra.pop("spec", {})},
        **extra,
    }


def apply(tmp_path, *documents, name: str = "in.yaml") -> str:
    """Write ``documents`` to one YAML file, ``manage.py apply -f`` it; the file's path."""
    from portal.machinery import yaml

    path = tmp_path / name
    path.write_text(yaml.dump_all(list(documents)))
    result = run("apply", "-f", str(path))
    assert result.code == 0, result.err
    return str(path)
