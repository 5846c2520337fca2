"""Bounded YAML aliasing: a document whose aliases expand past a limit is refused before it
is built, as kube-apiserver refuses it ("excessive aliasing").

A few hundred bytes of nested aliases (a "billion laughs") expand to gigabytes once anything
walks the value (validation, depth checks, rendering). PyYAML builds the alias-sharing node
graph cheaply; this walks that graph once, never expanding it, and counts what an expansion
would hold:

- alias uses: every ``*alias`` the expanded document would contain (aliases inside aliased
  content count each time they are expanded), at most ``MAX_ALIAS_USES``;
- expanded content: characters of scalars plus one per node, reached through aliases, at most
  ``MAX_ALIASED_CHARS`` (a document without aliases adds nothing, whatever its size);
- an alias inside the node it names (a recursive document) is refused outright: JSON has no
  cycles.

Merge keys (``<<: *base``) are aliases like any other, so the same bounds hold for them.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_ALIAS_USES = 10_000
MAX_ALIASED_CHARS = 256 * 1024


class ExcessiveAliasing(yaml.YAMLError):
    """The document's aliases expand past a limit, or one contains itself."""


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return [part for pair in node.value for part in pair]


def _refuse(detail: str, node: yaml.Node) -> ExcessiveAliasing:
    line = node.start_mark.line + 1 if node.start_mark is not None else "?"
    return ExcessiveAliasing(f"the document contains excessive aliasing: {detail} (line {line})")


def _check(uses: int, aliased: int, node: yaml.Node) -> None:
    if uses > MAX_ALIAS_USES:
        raise _refuse(f"more than {MAX_ALIAS_USES} alias uses once expanded", node)
    if aliased > MAX_ALIASED_CHARS:
        raise _refuse(f"aliases expand to more than {MAX_ALIASED_CHARS} characters", node)


def check_aliases(root: yaml.Node | None) -> None:
    """Raise ExcessiveAliasing when ``root``'s expansion passes a limit; linear in the
    number of nodes and edges of the graph, whatever the expansion would be.

    Walked in document order, the first time a node is reached is its anchor's definition;
    every later arrival at it is an alias. A node reached while still open is an alias
    inside its own anchor. Each node's expansion is (characters of scalars plus one per
    node, alias uses, characters reached through an alias).
    """
    if root is None or isinstance(root, yaml.ScalarNode):
        return
    done: dict[int, tuple[int, int, int]] = {}
    open_ids: set[int] = {id(root)}
    # a frame: [node, its children, next child's index, chars, uses, aliased]
    stack: list[list[Any]] = [[root, _children(root), 0, 1, 0, 0]]
    while stack:
        frame = stack[-1]
        node, children, index = frame[0], frame[1], frame[2]
        if index == len(children):
            stack.pop()
            open_ids.discard(id(node))
            done[id(node)] = (frame[3], frame[4], frame[5])
            if stack:
                parent = stack[-1]
                parent[3] += frame[3]
                parent[4] += frame[4]
                parent[5] += frame[5]
            continue
        frame[2] = index + 1
        child = children[index]
        key = id(child)
        seen = done.get(key)
        if seen is not None:  # an alias: its whole expansion is aliased content
            frame[3] += seen[0]
            frame[4] += seen[1] + 1
            frame[5] += seen[0]
            _check(frame[4], frame[5], child)
        elif key in open_ids:
            raise _refuse("an alias refers to a node that contains it", child)
        elif isinstance(child, yaml.ScalarNode):
            size = 1 + len(child.value)
            done[key] = (size, 0, 0)
            frame[3] += size
        else:
            open_ids.add(key)
            stack.append([child, _children(child), 0, 1, 0, 0])
