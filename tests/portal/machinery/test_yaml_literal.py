"""YAML for people: a multi-line string (a script) is written as a literal block and reads
back byte for byte, whatever its spaces, tabs and characters."""

from __future__ import annotations

import yaml
from hypothesis import given
from hypothesis import strategies as st

from portal.machinery.yaml import dump, load_one

LINE_CHARS = st.sampled_from(
    list("ab z#:-|>'\"{}[],&*!%@`\\\t ") + ["é", "ü", "日", "😀", "\u00a0"]
)
LINES = st.lists(st.text(LINE_CHARS, max_size=12), min_size=2, max_size=6)
SCRIPTS = LINES.map("\n".join) | LINES.map(lambda lines: "\n".join(lines) + "\n")
ANY_TEXT = st.text(max_size=40)


def scalar_style(text: str) -> str | None:
    node = yaml.compose(dump({"k": text}))
    return node.value[0][1].style


@given(SCRIPTS)
def test_a_script_is_a_literal_block_and_round_trips(script):
    written = dump({"spec": {"source": {"inline": script}}})
    assert load_one(written)["spec"]["source"]["inline"] == script
    assert scalar_style(script) == "|", written


@given(ANY_TEXT)
def test_any_string_round_trips(text):
    assert load_one(dump({"k": text, "list": [text]})) == {"k": text, "list": [text]}


def test_a_script_reads_as_written():
    script = 'set -e\nfor f in *; do\n\techo "$f"  \ndone\n'
    assert dump({"inline": script}) == (
        'inline: |\n  set -e\n  for f in *; do\n  \techo "$f"  \n  done\n'
    )


def test_a_carriage_return_stays_escaped():
    # a literal block would read "\r\n" back as "\n"
    assert scalar_style("a\r\nb") == '"'
    assert load_one(dump({"k": "a\r\nb"})) == {"k": "a\r\nb"}


def test_one_line_strings_keep_their_plain_style():
    assert dump({"name": "r1", "n": "1"}) == "name: r1\nn: '1'\n"


def test_a_next_line_character_survives_in_double_quotes():
    # PyYAML's own emitter writes NEL raw inside single quotes, where it reads back as a space
    for text in ("\x85", "a\x85b", "line\n\x85\n"):
        written = dump({"k": text})
        assert load_one(written) == {"k": text}, written
        assert "\\N" in written
