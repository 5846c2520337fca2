"""workflows.graph: the job graph's layering and its SVG (pure functions, no database)."""

from __future__ import annotations

import threading
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workflows.graph import PHASE_COLOURS, columns, layers, normalize, render_svg

SVG = "{http://www.w3.org/2000/svg}"
DIAMOND = {"build": [], "lint": ["build"], "test": ["build"], "deploy": ["lint", "test"]}


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # noqa: S314 - our own output


def nodes(svg: str) -> dict[str, ET.Element]:
    root = parse(svg)
    found = {}
    for element in root.iter():
        if element.get("class") == "k-node":
            found[element.get("data-job")] = element
    return found


def rect_of(node: ET.Element) -> ET.Element:
    return node.find(f"{SVG}rect")


def edges(svg: str) -> set[tuple[str, str]]:
    return {
        (e.get("data-from"), e.get("data-to"))
        for e in parse(svg).iter(f"{SVG}path")
        if "k-edge" in (e.get("class") or "").split()
    }


def finishes(function, *args, seconds: float = 5.0):
    """Run ``function`` in a thread: fail (instead of hanging the suite) if it loops."""
    result: list = []
    thread = threading.Thread(target=lambda: result.append(function(*args)), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{function.__name__} did not finish in {seconds}s"
    return result[0]


# ------------------------------------------------------------------------------ layering


def test_a_chain_is_one_job_per_column():
    chain = {"c": ["b"], "a": [], "b": ["a"]}
    assert layers(chain) == {"a": 0, "b": 1, "c": 2}
    assert columns(chain) == [["a"], ["b"], ["c"]]


def test_a_diamond_has_the_two_middle_jobs_in_one_column():
    assert layers(DIAMOND) == {"build": 0, "lint": 1, "test": 1, "deploy": 2}
    assert columns(DIAMOND) == [["build"], ["lint", "test"], ["deploy"]]


def test_a_job_goes_after_its_deepest_need_not_its_first():
    jobs = {**DIAMOND, "notify": ["build", "deploy"]}
    assert layers(jobs)["notify"] == 3


def test_jobs_in_a_column_sit_near_the_jobs_they_need():
    jobs = {"a": [], "b": [], "after-b": ["b"], "after-a": ["a"]}
    assert columns(jobs) == [["a", "b"], ["after-a", "after-b"]]


def test_needs_are_read_from_jobs_strings_and_ignore_unknown_and_self():
    jobs = {
        "a": {"runs-on": "bash", "steps": []},
        "b": {"needs": "a"},
        "c": {"needs": ["a", "a", "missing", "c", 7, None]},
        "d": "nonsense",
    }
    assert normalize(jobs) == {"a": [], "b": ["a"], "c": ["a"], "d": []}
    assert layers(jobs) == {"a": 0, "b": 1, "c": 1, "d": 0}


@pytest.mark.parametrize(
    "jobs",
    [
        {"a": ["b"], "b": ["a"]},
        {"a": ["a"]},
        {"a": ["c"], "b": ["a"], "c": ["b"], "tail": ["c"], "root": []},
        {f"j{i}": [f"j{(i + 1) % 50}", f"j{(i + 7) % 50}"] for i in range(50)},
    ],
    ids=["two-cycle", "self", "three-cycle-with-tail", "dense-cycles"],
)
def test_cycles_never_loop_forever(jobs):
    depth = finishes(layers, jobs)
    assert set(depth) == set(jobs)
    assert all(0 <= d < len(jobs) for d in depth.values())
    svg = finishes(render_svg, jobs, {})
    assert set(nodes(svg)) == set(jobs)


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=6),
        st.lists(st.text(min_size=1, max_size=6), max_size=4),
        max_size=12,
    )
)
def test_any_graph_lays_out_every_job_once_and_needs_point_right_unless_in_a_cycle(jobs):
    depth = finishes(layers, jobs)
    needs = normalize(jobs)
    assert set(depth) == set(needs)
    placed = [job for column in columns(jobs) for job in column]
    assert sorted(placed) == sorted(depth)
    for job, required in needs.items():
        for need in required:
            assert depth[need] < depth[job] or needs_transitively(needs, need, job)


def needs_transitively(needs: dict[str, list[str]], job: str, other: str) -> bool:
    seen, stack = set(), list(needs[job])
    while stack:
        current = stack.pop()
        if current == other:
            return True
        if current not in seen:
            seen.add(current)
            stack.extend(needs[current])
    return False


def test_a_cycle_leaves_out_only_the_edge_closing_it():
    jobs = {"setup": [], "a": ["setup", "b"], "b": ["a"], "after": ["b"]}
    depth = finishes(layers, jobs)
    assert depth["setup"] == 0
    assert depth["after"] > depth["b"] and depth["a"] > depth["setup"]
    assert abs(depth["a"] - depth["b"]) == 1
    svg = finishes(render_svg, jobs, {})
    assert len(edges(svg)) == 4  # every need is drawn
    back = [e for e in parse(svg).iter(f"{SVG}path") if "k-back" in (e.get("class") or "")]
    assert len(back) == 1 and back[0].get("stroke-dasharray")


def test_a_long_chain_needs_no_recursion():
    chain = {f"j{i}": [f"j{i - 1}"] if i else [] for i in range(5000)}
    assert layers(chain)["j4999"] == 4999


# ------------------------------------------------------------------------------ SVG


def test_the_svg_has_a_node_per_job_an_edge_per_need_and_columns_left_to_right():
    svg = render_svg(DIAMOND, {"build": "Succeeded"})
    found = nodes(svg)
    assert set(found) == set(DIAMOND)
    assert edges(svg) == {
        ("build", "lint"),
        ("build", "test"),
        ("lint", "deploy"),
        ("test", "deploy"),
    }
    x = {job: float(rect_of(node).get("x")) for job, node in found.items()}
    y = {job: float(rect_of(node).get("y")) for job, node in found.items()}
    assert x["build"] < x["lint"] == x["test"] < x["deploy"]
    assert y["lint"] != y["test"]


@pytest.mark.parametrize("phase", sorted(PHASE_COLOURS))
def test_each_node_is_coloured_by_its_phase_and_shows_it(phase):
    svg = render_svg({"only": []}, {"only": phase})
    node = nodes(svg)["only"]
    assert node.get("data-phase") == phase
    assert rect_of(node).get("fill") == PHASE_COLOURS[phase][0]
    texts = [t.text for t in node.iter(f"{SVG}text")]
    assert texts == ["only", phase]


def test_the_phase_colours_are_distinct():
    fills = [fill for fill, _stroke, _ink in PHASE_COLOURS.values()]
    assert len(set(fills)) == len(fills) == 7


def test_a_job_without_a_phase_in_a_run_is_pending_and_a_workflow_shows_none():
    run = nodes(render_svg({"a": []}, {}))["a"]
    assert run.get("data-phase") == "Pending"
    assert rect_of(run).get("fill") == PHASE_COLOURS["Pending"][0]
    template = nodes(render_svg({"a": []}))["a"]
    assert [t.text for t in template.iter(f"{SVG}text")] == ["a"]


def test_names_phases_and_links_are_escaped():
    evil = '<script>alert("x")</script>'
    svg = render_svg(
        {evil: [], "b": [evil]},
        {evil: "<b>Odd</b>", "b": "Running"},
        links={evil: '/x?a=1&b="><script>', "b": "#job-b"},
        title="<img src=x>",
    )
    assert "<script>" not in svg and "<b>" not in svg and "<img" not in svg
    assert "&lt;script&gt;" in svg
    parse(svg)  # still well-formed XML
    node = nodes(svg)[evil]
    assert node.get("href") == '/x?a=1&b="><script>'
    assert [t.text for t in node.iter(f"{SVG}text")][1] == "<b>Odd</b>"


def test_long_names_are_cut_in_the_node_but_kept_in_its_tooltip():
    name = "a-very-long-job-name-that-does-not-fit"
    node = nodes(render_svg({name: []}, {name: "Running"}))[name]
    shown = next(node.iter(f"{SVG}text")).text
    assert shown.endswith("…") and len(shown) < len(name)
    assert node.find(f"{SVG}title").text == f"{name}: Running"


def test_no_jobs_is_no_svg():
    assert render_svg({}) == ""
