"""No import cycles in the shipped packages: every strongly connected component of the module
import graph (imports inside functions and under TYPE_CHECKING count) is one module.

import-linter's ``acyclic_siblings`` contracts (pyproject.toml) hold each package's
subpackages to the same rule; this test covers single modules across packages, such as
``portal.models`` and ``portal.machinery.store``."""

from __future__ import annotations

import grimp

SHIPPED = ("portal", "scheduling", "runtimed", "workspaces", "workflows", "jobclasses")


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted (Tarjan's
    algorithm, iterative: the graph is deeper than Python's recursion limit allows)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, imported = work[-1]
            for other in imported:
                if other not in index:
                    index[other] = low[other] = len(index)
                    stack.append(other)
                    on_stack.add(other)
                    work.append(
                        (other, iter(sorted(graph.find_modules_directly_imported_by(other))))
                    )
                    break
                if other in on_stack:
                    low[module] = min(low[module], index[other])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def describe(graph: grimp.ImportGraph, component: list[str]) -> str:
    members = set(component)
    edges = [
        f"  {importer} -> {imported}"
        for importer in component
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & members)
    ]
    return f"{len(component)} modules:\n" + "\n".join(edges)


def test_the_shipped_packages_have_no_import_cycles():
    graph = grimp.build_graph(*SHIPPED, cache_dir=None)
    cycles = import_cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(describe(graph, c) for c in cycles)


def graph_of(*imports: tuple[str, str]) -> grimp.ImportGraph:
    graph = grimp.ImportGraph()
    for importer, imported in imports:
        graph.add_import(importer=importer, imported=imported)
    return graph


def test_a_cycle_of_any_length_is_found_and_a_chain_is_not():
    graph = graph_of(
        ("p.a", "p.b"),
        ("p.b", "p.c"),
        ("p.c", "p.a"),  # a, b, c: one cycle
        ("p.c", "p.d"),
        ("p.d", "p.e"),  # d, e: a chain out of it
        ("p.x", "p.y"),
        ("p.y", "p.x"),  # x, y: another
    )
    assert import_cycles(graph) == [["p.a", "p.b", "p.c"], ["p.x", "p.y"]]
    assert import_cycles(graph_of(("p.a", "p.b"), ("p.b", "p.c"))) == []
