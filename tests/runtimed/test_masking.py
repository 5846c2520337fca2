"""The secret masker: every value from a Secret becomes *** in a stream, however it is cut."""

from __future__ import annotations

import base64
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtimed.masking import (
    MIN_BASE64_BYTES,
    StreamMasker,
    mask_file,
    mask_text,
    masking_writer,
    patterns,
    secret_files,
)
from tests.helpers.examples import examples

PASSWORD = "s3cr3t-P@ssw0rd!"


def masked_in_pieces(values: list[str], data: bytes, cuts: list[int]) -> bytes:
    masker = StreamMasker(values)
    out = b""
    start = 0
    for cut in [*sorted(cuts), len(data)]:
        out += masker.feed(data[start:cut])
        start = max(start, cut)
    return out + masker.flush()


def test_a_value_is_masked() -> None:
    assert mask_text(f"PW={PASSWORD}.", [PASSWORD]) == "PW=***."


@pytest.mark.parametrize("cut", range(1, len(f"PW={PASSWORD}.")))
def test_a_value_split_across_chunks_is_masked(cut: int) -> None:
    data = f"PW={PASSWORD}.".encode()
    assert masked_in_pieces([PASSWORD], data, [cut]) == b"PW=***."


def test_a_value_cut_byte_by_byte_is_masked() -> None:
    data = f"a {PASSWORD} b {PASSWORD}".encode()
    assert masked_in_pieces([PASSWORD], data, list(range(len(data)))) == b"a *** b ***"


def test_bytes_that_cannot_begin_a_value_are_not_held_back() -> None:
    masker = StreamMasker([PASSWORD])
    assert masker.feed(b"waiting for the build...\n") == b"waiting for the build...\n"
    # a possible beginning of the value waits for the next chunk, or the end
    assert masker.feed(b"s3cr") == b""
    assert masker.feed(b"ew") == b"s3crew"
    assert masker.feed(b"s3") == b""
    assert masker.flush() == b"s3"


def test_a_short_value_at_the_end_of_a_chunk_is_masked() -> None:
    masker = StreamMasker(["abc", "abcdefgh"])
    assert masker.feed(b"x abc") + masker.feed(b" y") + masker.flush() == b"x *** y"


def test_the_longest_value_wins() -> None:
    assert mask_text("token-abc-def", ["token-abc", "token-abc-def"]) == "***"


def test_each_line_of_a_multi_line_value_is_masked() -> None:
    key = "-----BEGIN KEY-----\nMIIEvQIBADANBg\n-----END KEY-----\n"
    text = f"whole:\n{key}one line: MIIEvQIBADANBg\n"
    assert mask_text(text, [key]) == "whole:\n***\none line: ***\n"


def test_a_file_value_is_masked_without_its_newline() -> None:
    assert mask_text(f"key={PASSWORD} ok", [f"{PASSWORD}\n"]) == "key=*** ok"


@pytest.mark.parametrize("prefix", ["", "u:", "us:", "user:", "a-longer-user:"])
def test_base64_of_text_holding_a_value_is_masked(prefix: str) -> None:
    encoded = base64.b64encode(f"{prefix}{PASSWORD}".encode()).decode()
    masked = mask_text(f"auth: {encoded}\n", [PASSWORD])
    assert "***" in masked
    # what is left is the encoding of the prefix only: nothing that decodes to the value
    for form in patterns([PASSWORD]):
        assert form.decode() not in masked


def test_base64_forms_only_for_values_of_eight_bytes_or_more() -> None:
    short = "x" * (MIN_BASE64_BYTES - 1)
    assert patterns([short]) == [short.encode()]
    assert len(patterns(["y" * MIN_BASE64_BYTES])) == 4  # the value and 3 alignments


@pytest.mark.parametrize("blank", ["", " ", "\n", " \t\r\n"])
def test_blank_values_are_ignored(blank: str) -> None:
    assert patterns([blank]) == []
    masker = StreamMasker([blank])
    assert not masker
    assert masker.feed(b"a \n b") + masker.flush() == b"a \n b"


def test_blank_lines_of_a_multi_line_value_are_ignored() -> None:
    assert mask_text("a\n\nb c", ["one\n\ntwo"]) == "a\n\nb c"


@given(
    prefix=st.binary(max_size=40),
    suffix=st.binary(max_size=40),
    cuts=st.lists(st.integers(min_value=0, max_value=100), max_size=8),
)
@settings(max_examples=examples(200), deadline=None)
def test_no_cut_of_the_stream_lets_a_value_through(
    prefix: bytes, suffix: bytes, cuts: list[int]
) -> None:
    data = prefix + PASSWORD.encode() + suffix
    out = masked_in_pieces([PASSWORD], data, [min(cut, len(data)) for cut in cuts])
    assert PASSWORD.encode() not in out
    assert out == masked_in_pieces([PASSWORD], data, [])


def test_the_writer_masks_then_passes_on_and_flushes_at_the_end() -> None:
    written: list[bytes] = []
    write, flush = masking_writer(written.append, [PASSWORD])
    write(b"PW=" + PASSWORD.encode()[:5])
    write(PASSWORD.encode()[5:] + b" done ")
    write(PASSWORD.encode()[:3])
    flush()
    assert b"".join(written) == b"PW=*** done s3c"


def test_outputs_files_are_masked_in_place(tmp_path) -> None:
    outputs = tmp_path / "outputs"
    outputs.write_text(f"token={PASSWORD}\nname=build\n")
    mask_file(outputs, [PASSWORD])
    assert outputs.read_text() == "token=***\nname=build\n"


def test_masking_a_file_never_writes_through_a_link(tmp_path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text(PASSWORD)
    link = tmp_path / "outputs"
    os.symlink(target, link)
    mask_file(link, [PASSWORD])
    assert target.read_text() == PASSWORD


def test_secret_files_reads_every_key_of_every_mounted_secret(tmp_path) -> None:
    (tmp_path / "s3").mkdir()
    (tmp_path / "s3" / "accessKeyID").write_text("AKIAEXAMPLE\n")
    (tmp_path / "s3" / "secretAccessKey").write_text("wJalrXUtnFEMI\n")
    (tmp_path / "s3" / ".tmp-partial").write_text("ignored")
    (tmp_path / "stray-file").write_text("not a secret dir")
    assert sorted(secret_files(tmp_path)) == [b"AKIAEXAMPLE\n", b"wJalrXUtnFEMI\n"]
    assert secret_files(None) == []
    assert secret_files(tmp_path / "absent") == []
