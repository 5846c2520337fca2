"""Parse the step's outputs: the ``KEY=VALUE`` lines it appended to ``$KRUNTIME_OUTPUTS``.

Lines are trimmed; blank lines and ``#`` comments are skipped; the key is the text before the
first ``=`` and the value the rest, each trimmed of surrounding whitespace (inner spaces are
kept: ``  a  =  spaced value  `` is ``a: "spaced value"``); the last repeated key wins. Every
limit counts bytes of the trimmed UTF-8 text. Every failure is an
:class:`OutputsError` whose ``reason`` is ``OutputsInvalid`` or ``OutputsTooLarge``.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

from .protocol import Reason

MAX_OUTPUT_KEYS = 64
MAX_KEY_BYTES = 128
MAX_VALUE_BYTES = 8192
MAX_TOTAL_BYTES = 65536
# Generous: room for a full valid map plus comments and blanks; never read more than this.
MAX_FILE_BYTES = 1 << 20

OUTPUTS_INVALID = Reason.OUTPUTS_INVALID
OUTPUTS_TOO_LARGE = Reason.OUTPUTS_TOO_LARGE

_KEY = re.compile(r"[-._a-zA-Z0-9]+")


class OutputsError(Exception):
    """The outputs file breaks the contract; ``reason`` and ``message`` go to the Run's status."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def parse_outputs(path: Path) -> dict[str, str]:
    """The outputs the step wrote to ``path``; a missing file means none."""
    data = read_capped(path)
    if data is None:
        return {}
    outputs: dict[str, str] = {}
    for number, raw in enumerate(data.split(b"\n"), start=1):
        entry = parse_line(raw, number)
        if entry is not None:
            key, value = entry
            outputs[key] = value  # the last repeated key wins
    check_limits(outputs)
    return outputs


def read_capped(path: Path) -> bytes | None:
    """The file's bytes, or None if it does not exist; OutputsTooLarge past MAX_FILE_BYTES.

    Only the regular file runtimed made is read: the step may have swapped it (or its
    directory) for a symbolic link or a hard link to another file, such as a secret of the
    pod's, which would then land in ``status.outputs``. Neither is followed; either fails the
    step with OutputsInvalid, as a symlink among the artifacts does."""
    try:
        fd = _open_regular(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise OutputsError(
                OUTPUTS_INVALID, "the outputs file is a symbolic link, not a regular file"
            ) from None
        raise OutputsError(OUTPUTS_INVALID, f"the outputs file cannot be opened: {exc}") from exc
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise OutputsError(OUTPUTS_INVALID, "the outputs file is not a regular file")
        if found.st_nlink > 1:
            raise OutputsError(OUTPUTS_INVALID, "the outputs file is a hard link to another file")
    except OutputsError:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise OutputsError(
            OUTPUTS_TOO_LARGE, f"the outputs file is larger than {MAX_FILE_BYTES} bytes"
        )
    return data


def _open_regular(path: Path) -> int:
    """``path`` opened without following a symlink at its name or at its directory;
    O_NONBLOCK, so a FIFO left there cannot hang runtimed."""
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        return os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)
    finally:
        os.close(directory)


def parse_line(raw: bytes, number: int) -> tuple[str, str] | None:
    """One line as (key, value), or None for a blank line or a comment."""
    if b"\0" in raw:
        raise OutputsError(OUTPUTS_INVALID, f"line {number} of the outputs contains a NUL byte")
    try:
        line = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise OutputsError(
            OUTPUTS_INVALID, f"line {number} of the outputs is not valid UTF-8"
        ) from None
    if not line or line.startswith("#"):
        return None
    key, equals, value = line.partition("=")
    key, value = key.strip(), value.strip()
    if not equals:
        raise OutputsError(
            OUTPUTS_INVALID, f"line {number} of the outputs is not KEY=VALUE (it has no '=')"
        )
    if not _KEY.fullmatch(key):
        raise OutputsError(
            OUTPUTS_INVALID,
            f"line {number} of the outputs has an invalid key {key!r}: keys are "
            "non-empty and use only letters, digits, '-', '.' and '_'",
        )
    return key, value


def check_limits(outputs: dict[str, str]) -> None:
    """Raise OutputsTooLarge for the first key that breaks a limit of the final map."""
    total = 0
    for index, (key, value) in enumerate(outputs.items(), start=1):
        if index > MAX_OUTPUT_KEYS:
            raise OutputsError(
                OUTPUTS_TOO_LARGE,
                f"output {key!r} is key number {index}; at most {MAX_OUTPUT_KEYS} keys are allowed",
            )
        key_bytes, value_bytes = len(key.encode("utf-8")), len(value.encode("utf-8"))
        if key_bytes > MAX_KEY_BYTES:
            raise OutputsError(
                OUTPUTS_TOO_LARGE,
                f"output key {key!r} is {key_bytes} bytes; the limit is {MAX_KEY_BYTES} bytes",
            )
        if value_bytes > MAX_VALUE_BYTES:
            raise OutputsError(
                OUTPUTS_TOO_LARGE,
                f"the value of output {key!r} is "
                f"{value_bytes} bytes; the limit is {MAX_VALUE_BYTES} bytes",
            )
        total += key_bytes + value_bytes
        if total > MAX_TOTAL_BYTES:
            raise OutputsError(
                OUTPUTS_TOO_LARGE,
                f"output {key!r} brings the outputs to "
                f"{total} bytes; the limit is {MAX_TOTAL_BYTES} bytes in total",
            )
