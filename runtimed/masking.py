"""Mask secret values in output, as GitHub Actions does: each one becomes ``***``.

What is masked, for each secret value given: the value itself; each of its lines when it has
more than one (the final line break of a value, as a file has, is not part of it); and, for values of at
least :data:`MIN_BASE64_BYTES` bytes, the part of their Base64 encoding that does not depend
on the neighbouring bytes, at each of the 3 alignments a value can take inside a longer
encoded text (``base64 <<< "user:$PW"``). Blank values and blank lines (whitespace only) are
never masked. Values transformed in any other way (reversed, hex, URL-encoded) are not.

:class:`StreamMasker` masks a byte stream chunk by chunk: it holds back only the bytes at the
end of a chunk that could still begin a value, so a value split across chunks is masked
while every other byte goes out at once. A plain package module: no Django (import-linter).
"""

from __future__ import annotations

import base64
import os
import re
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

MASK = b"***"
MIN_BASE64_BYTES = 8


def _base64_forms(value: bytes) -> list[bytes]:
    """The stable middle of ``value``'s Base64 encoding at offsets 0, 1 and 2 of a group."""
    forms = []
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + value).rstrip(b"=")
        # chars 0..shift (exclusive of the value's own bits) mix in the bytes before it
        head = (0, 2, 3)[shift]
        # the last partial group's final char mixes in the byte after it
        tail = {0: 0, 1: 1, 2: 1}[(shift + len(value)) % 3]
        form = encoded[head : len(encoded) - tail]
        if form:
            forms.append(form)
    return forms


def patterns(values: Iterable[str | bytes]) -> list[bytes]:
    """Every byte string to mask for ``values``, longest first, without duplicates."""
    found: set[bytes] = set()
    for value in values:
        raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        # a file's final newline is not part of the secret (nor is it masked)
        raw = raw.rstrip(b"\r\n")
        if not raw.strip():
            continue
        pieces = {raw}
        lines = raw.splitlines()
        if len(lines) > 1:
            pieces.update(line for line in lines if line.strip())
        for piece in list(pieces):
            if len(piece) >= MIN_BASE64_BYTES:
                pieces.update(_base64_forms(piece))
        found.update(piece for piece in pieces if piece.strip())
    return sorted(found, key=lambda piece: (-len(piece), piece))


class StreamMasker:
    """``feed`` chunks in, get masked bytes out; ``flush`` at the end of the stream."""

    def __init__(self, values: Iterable[str | bytes]) -> None:
        self._patterns = patterns(values)
        self._longest = len(self._patterns[0]) if self._patterns else 0
        self._regex = (
            re.compile(b"|".join(re.escape(piece) for piece in self._patterns))
            if self._patterns
            else None
        )
        self._firsts = {piece[0] for piece in self._patterns}
        self._pending = b""

    def __bool__(self) -> bool:
        return self._regex is not None

    def feed(self, chunk: bytes) -> bytes:
        if self._regex is None:
            return chunk
        data = self._pending + chunk
        # a match starting before `safe` lies wholly inside `data`
        safe = max(0, len(data) - self._longest + 1)
        out = bytearray()
        position = 0
        while (match := self._regex.search(data, position)) is not None:
            if match.start() >= safe:
                break
            out += data[position : match.start()]
            out += MASK
            position = match.end()
        keep = max(position, self._hold_from(data, max(position, safe)))
        out += data[position:keep]
        self._pending = data[keep:]
        return bytes(out)

    def _hold_from(self, data: bytes, start: int) -> int:
        """The first index from ``start`` where the rest of ``data`` could begin a value."""
        for index in range(start, len(data)):
            if data[index] in self._firsts:
                rest = data[index:]
                # a value could begin here, or one (a short one) already does
                if any(
                    piece.startswith(rest) or rest.startswith(piece) for piece in self._patterns
                ):
                    return index
        return len(data)

    def flush(self) -> bytes:
        data, self._pending = self._pending, b""
        return mask_bytes(data, self._regex)


def mask_bytes(data: bytes, regex: re.Pattern[bytes] | None) -> bytes:
    return data if regex is None else regex.sub(MASK, data)


def mask_text(text: str, values: Iterable[str | bytes]) -> str:
    """``text`` with every value masked (outputs, messages)."""
    masker = StreamMasker(values)
    if not masker:
        return text
    data = text.encode("utf-8", "surrogatepass")
    return (masker.feed(data) + masker.flush()).decode("utf-8", "surrogatepass")


def masking_writer(
    write: Callable[[bytes], object], values: Iterable[str | bytes]
) -> tuple[Callable[[bytes], object], Callable[[], None]]:
    """A ``write`` that masks before passing on, and the ``flush`` to call at the end."""
    masker = StreamMasker(values)
    if not masker:
        return write, lambda: None

    def masked_write(chunk: bytes) -> None:
        if out := masker.feed(chunk):
            write(out)

    def flush() -> None:
        if out := masker.flush():
            write(out)

    return masked_write, flush


def secret_files(root: Path | None) -> list[bytes]:
    """The contents of every file of a Secret-volume layout ``<root>/<secret>/<key>``."""
    values: list[bytes] = []
    if root is None or not root.is_dir():
        return values
    for secret in sorted(root.iterdir()):
        if secret.name.startswith(".") or not secret.is_dir():
            continue
        for key in sorted(secret.iterdir()):
            if key.name.startswith(".") or not key.is_file():
                continue
            try:
                values.append(key.read_bytes())
            except OSError:
                continue
    return values


def mask_file(path: Path, values: Iterable[str | bytes]) -> None:
    """Rewrite the regular file ``path`` (never a link's target) with the values masked."""
    masker = StreamMasker(values)
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    with os.fdopen(fd, "r+b") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return
        data = handle.read()
        masked = masker.feed(data) + masker.flush()
        if masked != data:
            handle.seek(0)
            handle.write(masked)
            handle.truncate()
