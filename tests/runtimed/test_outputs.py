"""The step's outputs file: KEY=VALUE lines, comments, last-wins, and every limit at its bound."""

from __future__ import annotations

import os

import pytest

from runtimed.outputs import (
    MAX_FILE_BYTES,
    MAX_KEY_BYTES,
    MAX_OUTPUT_KEYS,
    MAX_TOTAL_BYTES,
    MAX_VALUE_BYTES,
    OutputsError,
    parse_outputs,
)


def write(tmp_path, data: bytes | str):
    path = tmp_path / "outputs"
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def fails(path, reason: str) -> OutputsError:
    with pytest.raises(OutputsError) as caught:
        parse_outputs(path)
    assert caught.value.reason == reason
    assert caught.value.message == str(caught.value)
    return caught.value


def test_the_limits_are_exported():
    assert (MAX_OUTPUT_KEYS, MAX_KEY_BYTES, MAX_VALUE_BYTES, MAX_TOTAL_BYTES) == (
        64,
        128,
        8192,
        65536,
    )


def test_a_missing_file_means_no_outputs(tmp_path):
    assert parse_outputs(tmp_path / "absent") == {}


def test_an_empty_file_means_no_outputs(tmp_path):
    assert parse_outputs(write(tmp_path, "")) == {}


def test_comments_blanks_and_whitespace_are_skipped(tmp_path):
    text = "# a comment\n\n   \n  version=1.2.3  \n\t# indented comment\r\nimage.tag=abc\r\n"
    assert parse_outputs(write(tmp_path, text)) == {"version": "1.2.3", "image.tag": "abc"}


def test_the_last_repeated_key_wins(tmp_path):
    assert parse_outputs(write(tmp_path, "a=1\nb=2\na=3\n")) == {"a": "3", "b": "2"}


def test_the_value_is_everything_after_the_first_equals(tmp_path):
    text = "query=a=b&c==d\nempty=\nspaced=x  y\nunicode=héllo wörld\n"
    assert parse_outputs(write(tmp_path, text)) == {
        "query": "a=b&c==d",
        "empty": "",
        "spaced": "x  y",
        "unicode": "héllo wörld",
    }


def test_a_last_line_without_newline_counts(tmp_path):
    assert parse_outputs(write(tmp_path, "a=1\nb=2")) == {"a": "1", "b": "2"}


def test_keys_may_use_dashes_dots_underscores_and_digits(tmp_path):
    assert parse_outputs(write(tmp_path, "A-b_c.9=x\n")) == {"A-b_c.9": "x"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  a  =  spaced value  \n", {"a": "spaced value"}),
        ("key3 = val3\n", {"key3": "val3"}),
        ("k\t=\tv\n", {"k": "v"}),
        ("k =\n", {"k": ""}),
        ("k= inner  spaces  kept \n", {"k": "inner  spaces  kept"}),
        ("k = a = b\n", {"k": "a = b"}),
    ],
    ids=["around-both", "around-equals", "tabs", "empty-value", "inner-kept", "later-equals"],
)
def test_keys_and_values_are_trimmed(tmp_path, text, expected):
    assert parse_outputs(write(tmp_path, text)) == expected


def test_limits_count_the_trimmed_key_and_value(tmp_path):
    text = " " + "k" * MAX_KEY_BYTES + "  =  " + "v" * MAX_VALUE_BYTES + "  \n"
    assert parse_outputs(write(tmp_path, text)) == {"k" * MAX_KEY_BYTES: "v" * MAX_VALUE_BYTES}


@pytest.mark.parametrize(
    "line", ["=value", " =value", "\t = value", "has space=x", "bad/key=x", "clé=x", "a b"]
)
def test_an_invalid_line_names_its_number(tmp_path, line):
    error = fails(write(tmp_path, f"# header\nok=1\n{line}\n"), "OutputsInvalid")
    assert "line 3" in error.message


def test_invalid_utf8_names_the_line(tmp_path):
    error = fails(write(tmp_path, b"ok=1\nbad=\xff\xfe\n"), "OutputsInvalid")
    assert "line 2" in error.message and "UTF-8" in error.message


def test_a_nul_byte_is_invalid(tmp_path):
    error = fails(write(tmp_path, b"ok=1\nbad=a\x00b\n"), "OutputsInvalid")
    assert "line 2" in error.message and "NUL" in error.message


def test_64_keys_pass_and_65_fail(tmp_path):
    lines = "".join(f"k{index}=v\n" for index in range(MAX_OUTPUT_KEYS))
    assert len(parse_outputs(write(tmp_path, lines))) == 64
    error = fails(write(tmp_path, lines + "k64=v\n"), "OutputsTooLarge")
    assert "'k64'" in error.message and "64" in error.message


def test_the_key_count_is_taken_after_last_wins(tmp_path):
    lines = "".join(f"k{index}=v\n" for index in range(MAX_OUTPUT_KEYS)) + "k0=again\n"
    assert parse_outputs(write(tmp_path, lines))["k0"] == "again"


def test_a_128_byte_key_passes_and_129_fails(tmp_path):
    assert parse_outputs(write(tmp_path, "k" * 128 + "=v\n")) == {"k" * 128: "v"}
    error = fails(write(tmp_path, "k" * 129 + "=v\n"), "OutputsTooLarge")
    assert "k" * 129 in error.message and "128" in error.message


def test_value_limit_counts_bytes_not_characters(tmp_path):
    at_limit = "é" * (MAX_VALUE_BYTES // 2)  # two bytes each: 8192 bytes
    assert parse_outputs(write(tmp_path, f"v={at_limit}\n")) == {"v": at_limit}
    error = fails(write(tmp_path, f"v={at_limit}x\n"), "OutputsTooLarge")
    assert "'v'" in error.message and "8193" in error.message and "8192" in error.message


def test_an_8192_byte_ascii_value_passes_and_8193_fails(tmp_path):
    assert len(parse_outputs(write(tmp_path, "v=" + "x" * 8192))["v"]) == 8192
    fails(write(tmp_path, "v=" + "x" * 8193), "OutputsTooLarge")


def test_value_length_is_measured_after_trimming(tmp_path):
    assert parse_outputs(write(tmp_path, "v=" + "x" * 8192 + "    \n"))["v"] == "x" * 8192


def total_of(size: int) -> str:
    """Lines whose keys and values add up to exactly ``size`` bytes."""
    lines, remaining, index = [], size, 0
    while remaining:
        key = f"k{index:02d}"
        value = "x" * min(MAX_VALUE_BYTES, remaining - len(key))
        lines.append(f"{key}={value}\n")
        remaining -= len(key) + len(value)
        index += 1
    return "".join(lines)


def test_a_65536_byte_total_passes_and_65537_fails(tmp_path):
    outputs = parse_outputs(write(tmp_path, total_of(MAX_TOTAL_BYTES)))
    assert sum(len(key) + len(value) for key, value in outputs.items()) == 65536
    error = fails(write(tmp_path, total_of(MAX_TOTAL_BYTES + 1)), "OutputsTooLarge")
    assert "65537" in error.message and "65536" in error.message and "'k" in error.message


def test_the_total_counts_only_the_final_map(tmp_path):
    text = total_of(MAX_TOTAL_BYTES) + "k00=short\n"  # overwrites an 8189-byte value
    assert parse_outputs(write(tmp_path, text))["k00"] == "short"


def test_comments_count_toward_the_file_cap(tmp_path):
    comment = "#" + "c" * 1022 + "\n"
    assert parse_outputs(write(tmp_path, comment * (MAX_FILE_BYTES // 1024))) == {}
    fails(write(tmp_path, comment * (MAX_FILE_BYTES // 1024) + "a=1\n"), "OutputsTooLarge")


def test_a_huge_file_is_refused_without_reading_it_all(tmp_path):
    path = tmp_path / "outputs"
    with open(path, "wb") as handle:
        handle.truncate(1 << 32)  # sparse 4 GiB: reading it whole would never finish in time
    error = fails(path, "OutputsTooLarge")
    assert str(MAX_FILE_BYTES) in error.message


def test_a_fifo_does_not_hang(tmp_path):
    path = tmp_path / "outputs"
    os.mkfifo(path)
    fails(path, "OutputsInvalid")


def secret_beside(tmp_path):
    secret = tmp_path / "secret_key"
    secret.write_text("SECRET=hunter2\n")
    return secret


def test_a_symlink_to_another_file_is_refused_not_followed(tmp_path):
    path = tmp_path / "outputs"
    path.symlink_to(secret_beside(tmp_path))
    error = fails(path, "OutputsInvalid")
    assert "symbolic link" in error.message and "hunter2" not in error.message


def test_a_dangling_symlink_is_refused_not_read_as_no_outputs(tmp_path):
    (tmp_path / "outputs").symlink_to(tmp_path / "nowhere")
    fails(tmp_path / "outputs", "OutputsInvalid")


def test_a_symlink_to_a_directory_is_refused(tmp_path):
    (tmp_path / "outputs").symlink_to(tmp_path)
    fails(tmp_path / "outputs", "OutputsInvalid")


def test_a_directory_swapped_for_a_symlink_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "outputs").write_text("SECRET=hunter2\n")
    (tmp_path / "attempt").symlink_to(elsewhere)
    error = fails(tmp_path / "attempt" / "outputs", "OutputsInvalid")
    assert "symbolic link" in error.message


def test_a_hard_link_to_another_file_is_refused(tmp_path):
    path = tmp_path / "outputs"
    os.link(secret_beside(tmp_path), path)
    error = fails(path, "OutputsInvalid")
    assert "hard link" in error.message


def test_a_directory_is_refused(tmp_path):
    (tmp_path / "outputs").mkdir()
    fails(tmp_path / "outputs", "OutputsInvalid")
