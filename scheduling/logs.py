"""Run logs on the control plane: storing the chunks runtimed ships, and reading them back.

``append_chunk`` stores one ``scheduling.append_log`` chunk idempotently (a redelivered chunk has
the same offset) and keeps each attempt's log under ``KRUNTIMES_RUN_LOG_LIMIT_BYTES`` by
deleting its oldest chunks. ``read_log`` assembles the text of one attempt, with a marker line
where the oldest output was truncated or where chunks never arrived; ``follow_log`` polls it
until the attempt is over (the API, ``manage.py logs -f`` and the admin share it).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from celery import shared_task
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.utils import timezone

from runtimed import protocol
from scheduling import metrics
from scheduling.models import TERMINAL_PHASES, Run, RunLogChunk

log = logging.getLogger(__name__)

DEFAULT_LIMIT_BYTES = 4 * 1024 * 1024
# At most this many old chunks are deleted per append: the bound catches up over a few calls.
MAX_DELETES_PER_APPEND = 500
READ_BATCH = 200


# ---------------------------------------------------------------------------- storing


def limit_bytes() -> int:
    return int(getattr(settings, "KRUNTIMES_RUN_LOG_LIMIT_BYTES", DEFAULT_LIMIT_BYTES))


def _parse_chunk(chunk) -> dict | None:
    """The chunk's fields, typed; None if it is malformed."""
    if not isinstance(chunk, dict):
        return None
    try:
        parsed = {
            "namespace": str(chunk["namespace"]),
            "name": str(chunk["name"]),
            "uid": uuid.UUID(str(chunk["uid"])),
            "attempt": int(chunk["attempt"]),
            "offset": int(chunk["offset"]),
            "size": int(chunk["size"]),
            "text": chunk["text"],
        }
    except (KeyError, TypeError, ValueError):
        return None
    if (
        not isinstance(parsed["text"], str)
        or parsed["attempt"] < 1
        or parsed["offset"] < 0
        or parsed["size"] < 0
    ):
        return None
    return parsed


def append_chunk(chunk: dict, now) -> bool:
    """Store one shipped chunk; False when it is dropped (unknown Run, future attempt, dup)."""
    parsed = _parse_chunk(chunk)
    if parsed is None:
        log.warning("dropping a malformed log chunk: %.200r", chunk)
        return False
    if parsed["size"] == 0 and not parsed["text"]:
        return False
    run = (
        Run.objects.filter(namespace=parsed["namespace"], name=parsed["name"], uid=parsed["uid"])
        .only("pk", "attempt")
        .first()
    )
    if run is None:
        log.info(
            "dropping a log chunk of %s/%s uid %s: no such Run",
            parsed["namespace"],
            parsed["name"],
            parsed["uid"],
        )
        return False
    if parsed["attempt"] > run.attempt:
        log.info(
            "dropping a log chunk of Run %s attempt %d: the Run is at attempt %d",
            parsed["uid"],
            parsed["attempt"],
            run.attempt,
        )
        return False
    try:
        with transaction.atomic():
            RunLogChunk.objects.create(
                run=run,
                attempt=parsed["attempt"],
                offset=parsed["offset"],
                size=parsed["size"],
                text=parsed["text"],
                created=now,
            )
    except IntegrityError:  # a redelivery: this offset is stored already
        return False
    metrics.LOG_BYTES.inc(parsed["size"])
    enforce_limit(run, parsed["attempt"], limit_bytes())
    return True


def enforce_limit(run: Run, attempt: int, limit: int) -> int:
    """Delete the attempt's oldest chunks until its sizes sum to at most ``limit``.

    The newest chunk is always kept, even alone over the limit. Returns the chunks deleted.
    """
    chunks = RunLogChunk.objects.filter(run=run, attempt=attempt)
    total = chunks.aggregate(total=Sum("size"))["total"] or 0
    if total <= limit:
        return 0
    doomed = []
    for pk, size in chunks.order_by("offset").values_list("pk", "size")[:MAX_DELETES_PER_APPEND]:
        if total <= limit:
            break
        doomed.append(pk)
        total -= size
    newest = chunks.order_by("-offset").values_list("pk", flat=True).first()
    doomed = [pk for pk in doomed if pk != newest]
    if doomed:
        RunLogChunk.objects.filter(pk__in=doomed).delete()
    return len(doomed)


@shared_task(name=protocol.APPEND_LOG_TASK, ignore_result=True)
def append_log(chunk: dict) -> bool:
    return append_chunk(chunk, timezone.now())


# ---------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class LogSlice:
    """A piece of one attempt's log, and where the next read continues."""

    text: str
    next_offset: int  # pass as ``after_offset`` to read what comes next
    truncated_bytes: int = 0  # raw bytes dropped from the start (the first kept offset)
    gaps: tuple[tuple[int, int], ...] = field(default=())  # (offset, missing bytes)


def truncated_marker(size: int) -> str:
    return f"[… {size} bytes truncated …]\n"


def gap_marker(size: int) -> str:
    return f"[… {size} bytes missing …]\n"


def read_log(
    run: Run,
    attempt: int | None = None,
    *,
    after_offset: int | None = None,
    tail_lines: int | None = None,
    limit_bytes: int | None = None,
) -> LogSlice:
    """The text of ``attempt`` (default: the current one) from ``after_offset`` on.

    ``tail_lines`` keeps only the last lines; ``limit_bytes`` caps the UTF-8 size of the text.
    The text starts with a truncation marker when it reaches back to dropped output.
    """
    attempt = run.attempt if attempt is None else attempt
    chunks = RunLogChunk.objects.filter(run=run, attempt=attempt)
    first_kept = chunks.order_by("offset").values_list("offset", flat=True).first()
    start = after_offset or 0
    if first_kept is None:
        return LogSlice("", start)
    chunks = chunks.filter(offset__gte=start) if after_offset else chunks
    fields = ("offset", "size", "text")
    if tail_lines is not None:
        picked = _tail_chunks(chunks.only(*fields), tail_lines)
    else:
        picked = _head_chunks(chunks.only(*fields), limit_bytes)
    if not picked:
        return LogSlice("", start, first_kept)
    text, gaps = _assemble(picked, start, first_kept)
    if tail_lines is not None:
        text = last_lines(text, tail_lines)
    if limit_bytes is not None:
        text = cut_to_bytes(text, limit_bytes)
    end = picked[-1].offset + picked[-1].size
    return LogSlice(text, end, first_kept, tuple(gaps))


def _head_chunks(query, limit: int | None) -> list[RunLogChunk]:
    """Chunks in order, enough to fill ``limit`` bytes of text (all of them without one)."""
    picked, size = [], 0
    for chunk in query.order_by("offset").iterator(chunk_size=READ_BATCH):
        picked.append(chunk)
        size += len(chunk.text.encode())
        if limit is not None and size >= limit:
            break
    return picked


def _tail_chunks(query, lines: int) -> list[RunLogChunk]:
    """The newest chunks, enough to hold the last ``lines`` lines (at least one: the end)."""
    picked, newlines = [], 0
    for chunk in query.order_by("-offset").iterator(chunk_size=READ_BATCH):
        picked.append(chunk)
        newlines += chunk.text.count("\n")
        if newlines > lines or lines <= 0:
            break
    picked.reverse()
    return picked


def _assemble(
    chunks: list[RunLogChunk], start: int, first_kept: int
) -> tuple[str, list[tuple[int, int]]]:
    """The chunks' text with markers for truncated and missing output."""
    parts: list[str] = []
    gaps: list[tuple[int, int]] = []
    position = start
    for chunk in chunks:
        if chunk.offset > position:
            missing = chunk.offset - position
            if parts and not parts[-1].endswith("\n"):
                parts.append("\n")  # a marker is a line of its own
            if chunk.offset == first_kept:  # before the oldest kept chunk: truncated
                parts.append(truncated_marker(missing))
            else:
                gaps.append((position, missing))
                parts.append(gap_marker(missing))
        parts.append(chunk.text)
        position = max(position, chunk.offset + chunk.size)
    return "".join(parts), gaps


def last_lines(text: str, lines: int) -> str:
    """The last ``lines`` lines of ``text`` (a final newline does not start a line)."""
    if lines <= 0:
        return ""
    cut = len(text) - 1 if text.endswith("\n") else len(text)
    for _ in range(lines):
        cut = text.rfind("\n", 0, cut)
        if cut < 0:
            return text
    return text[cut + 1 :]


def cut_to_bytes(text: str, limit: int) -> str:
    """At most ``limit`` bytes of UTF-8, never half a character."""
    encoded = text.encode()
    if len(encoded) <= limit:
        return text
    return encoded[: max(0, limit)].decode(errors="ignore")


# ---------------------------------------------------------------------------- following


@dataclass(frozen=True)
class FollowPolicy:
    """How a follower polls: injectable time for tests."""

    poll_interval: float = 0.2
    grace: float = 1.0  # keep polling this long after the attempt ended, for late chunks
    max_seconds: float = 3600.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic


DEFAULT_FOLLOW = FollowPolicy()


def attempt_over(run_id: int, attempt: int) -> bool:
    """Has this attempt ended (the Run is terminal, retried past it, or gone)?"""
    row = Run.objects.filter(pk=run_id).values_list("phase", "attempt").first()
    if row is None:
        return True
    phase, current = row
    return attempt < current or phase in TERMINAL_PHASES


def follow_log(
    run: Run,
    attempt: int | None = None,
    *,
    tail_lines: int | None = None,
    limit_bytes: int | None = None,
    policy: FollowPolicy = DEFAULT_FOLLOW,
    idle_pieces: bool = False,
) -> Iterator[str]:
    """Yield the log, then new text as it arrives, until the attempt is over and quiet.

    ``idle_pieces`` yields ``""`` after each quiet poll, so a server that reads the stream
    from another thread can stop it between polls once its client has gone."""
    attempt = run.attempt if attempt is None else attempt
    first = read_log(run, attempt, tail_lines=tail_lines, limit_bytes=limit_bytes)
    budget = None if limit_bytes is None else limit_bytes - len(first.text.encode())
    if first.text:
        yield first.text
    position = first.next_offset
    deadline = policy.clock() + policy.max_seconds
    quiet_since: float | None = None
    while (budget is None or budget > 0) and policy.clock() < deadline:
        over = attempt_over(run.pk, attempt)  # before reading: chunks stored until now count
        piece = read_log(run, attempt, after_offset=position, limit_bytes=budget)
        if piece.text:
            yield piece.text
            if budget is not None:
                budget -= len(piece.text.encode())
            quiet_since = None
        elif idle_pieces:
            yield ""
        position = max(position, piece.next_offset)
        if over and not piece.text:
            quiet_since = policy.clock() if quiet_since is None else quiet_since
            if policy.clock() - quiet_since >= policy.grace:
                return
        policy.sleep(policy.poll_interval)
