"""Reading the project's own source: the method calls a rule forbids outside one module."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path


def method_calls(path: Path, matches: Callable[[ast.Call, ast.Attribute], bool]) -> list[int]:
    """Lines of the ``receiver.method(...)`` calls in ``path`` that ``matches`` picks."""
    tree = ast.parse(path.read_text())
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and matches(node, node.func)
    ]
