"""Run logs on the control plane: idempotent appends, drops, the per-attempt bound with its
truncation marker, gaps, tail and limit, and following until the attempt is over."""

from __future__ import annotations

import pytest
from django.utils import timezone

from scheduling import logs
from scheduling.models import Run, RunLogChunk
from tests.helpers.records import make_run

pytestmark = pytest.mark.django_db


def chunk(
    run: Run,
    offset: int,
    text: str,
    *,
    attempt: int | None = None,
    size: int | None = None,
    **changes,
) -> dict:
    return {
        "namespace": run.namespace,
        "name": run.name,
        "uid": str(run.uid),
        "attempt": run.attempt if attempt is None else attempt,
        "podUID": "pod-uid",
        "offset": offset,
        "size": len(text.encode()) if size is None else size,
        "text": text,
        **changes,
    }


def append(run: Run, offset: int, text: str, **options) -> bool:
    return logs.append_chunk(chunk(run, offset, text, **options), timezone.now())


def append_lines(run: Run, *texts: str, attempt: int | None = None) -> int:
    offset = 0
    for text in texts:
        assert append(run, offset, text, attempt=attempt)
        offset += len(text.encode())
    return offset


def stored(run: Run, attempt: int = 1) -> list[tuple[int, str]]:
    return list(
        RunLogChunk.objects.filter(run=run, attempt=attempt)
        .order_by("offset")
        .values_list("offset", "text")
    )


@pytest.fixture
def run() -> Run:
    return make_run("build")


def set_attempt(run: Run, attempt: int, phase: str = "Running") -> Run:
    Run.objects.filter(pk=run.pk).update(attempt=attempt, phase=phase)
    run.refresh_from_db()
    return run


# ---------------------------------------------------------------------------- appending


def test_append_stores_a_chunk_and_ignores_a_redelivery(run):
    assert append(run, 0, "hello\n")
    assert not append(run, 0, "hello\n")
    assert not append(run, 0, "different text, same offset\n")
    assert stored(run) == [(0, "hello\n")]


def test_the_celery_task_appends_too(run):
    logs.append_log.delay(chunk(run, 0, "via task\n"))
    assert stored(run) == [(0, "via task\n")]


def test_chunks_of_unknown_runs_and_other_uids_are_dropped(run):
    assert not append(run, 0, "x", name="nope")
    assert not append(run, 0, "x", namespace="elsewhere")
    assert not append(run, 0, "x", uid="00000000-0000-0000-0000-000000000000")
    assert not append(run, 0, "x", uid="not-a-uuid")
    assert RunLogChunk.objects.count() == 0


@pytest.mark.parametrize(
    "changes",
    [
        {"offset": -1},
        {"attempt": 0},
        {"size": "big"},
        {"text": None},
        {"attempt": None},
    ],
)
def test_malformed_chunks_are_dropped(run, changes):
    assert not logs.append_chunk({**chunk(run, 0, "x"), **changes}, timezone.now())
    assert not logs.append_chunk("not a dict", timezone.now())
    assert RunLogChunk.objects.count() == 0


def test_a_future_attempt_is_dropped_an_older_one_is_stored(run):
    set_attempt(run, 2)
    assert not append(run, 0, "from the future", attempt=3)
    assert append(run, 0, "first attempt", attempt=1)
    assert append(run, 0, "second attempt", attempt=2)
    assert stored(run, 1) == [(0, "first attempt")]
    assert stored(run, 2) == [(0, "second attempt")]


def test_an_empty_chunk_is_not_stored(run):
    assert not append(run, 0, "")
    assert append(run, 0, "", size=1)  # a byte whose character completes in the next chunk
    assert stored(run) == [(0, "")]


# ---------------------------------------------------------------------------- the bound


def test_the_oldest_chunks_are_deleted_beyond_the_limit(run, settings):
    settings.KRUNTIMES_RUN_LOG_LIMIT_BYTES = 10
    append_lines(run, "aaaa\n", "bbbb\n")
    assert [o for o, _ in stored(run)] == [0, 5]  # exactly 10 bytes: both kept
    append(run, 10, "cccc\n")
    assert [o for o, _ in stored(run)] == [5, 10]
    append(run, 15, "dddddddddddd\n")  # 13 bytes alone: only the newest is kept
    assert [o for o, _ in stored(run)] == [15]


def test_the_bound_is_per_attempt(run, settings):
    settings.KRUNTIMES_RUN_LOG_LIMIT_BYTES = 6
    set_attempt(run, 2)
    append_lines(run, "one\n", attempt=1)
    append_lines(run, "two\n", "two\n", attempt=2)
    assert stored(run, 1) == [(0, "one\n")]
    assert stored(run, 2) == [(4, "two\n")]


def test_a_big_backlog_is_deleted_a_bounded_batch_at_a_time(run, settings, monkeypatch):
    monkeypatch.setattr(logs, "MAX_DELETES_PER_APPEND", 2)
    append_lines(run, *["x\n"] * 6)
    settings.KRUNTIMES_RUN_LOG_LIMIT_BYTES = 2
    append(run, 12, "y\n")
    assert len(stored(run)) == 5  # two deleted by this call
    append(run, 14, "z\n")
    assert len(stored(run)) == 4


def test_the_truncated_log_starts_with_a_marker(run, settings):
    settings.KRUNTIMES_RUN_LOG_LIMIT_BYTES = 10
    append_lines(run, "line 1\n", "line 2\n", "line 3\n")
    piece = logs.read_log(run)
    assert piece.text == "[… 14 bytes truncated …]\nline 3\n"
    assert piece.truncated_bytes == 14
    assert piece.next_offset == 21
    assert piece.gaps == ()


# ---------------------------------------------------------------------------- reading


def test_read_the_whole_log_and_continue_after_an_offset(run):
    end = append_lines(run, "one\n", "two\n")
    piece = logs.read_log(run)
    assert (piece.text, piece.next_offset, piece.truncated_bytes) == ("one\ntwo\n", end, 0)
    assert logs.read_log(run, after_offset=end).text == ""
    append(run, end, "three\n")
    later = logs.read_log(run, after_offset=end)
    assert (later.text, later.next_offset) == ("three\n", end + 6)


def test_an_empty_log(run):
    piece = logs.read_log(run)
    assert (piece.text, piece.next_offset, piece.truncated_bytes) == ("", 0, 0)
    assert logs.read_log(run, after_offset=7).next_offset == 7


def test_a_missing_chunk_shows_as_a_gap(run):
    append(run, 0, "start\n")
    append(run, 6, "partial")
    append(run, 100, "end\n")  # 87 bytes never arrived
    piece = logs.read_log(run)
    assert piece.text == "start\npartial\n[… 87 bytes missing …]\nend\n"
    assert piece.gaps == ((13, 87),)
    assert piece.truncated_bytes == 0


def test_a_follower_behind_the_truncation_sees_the_truncation_marker(run, settings):
    append_lines(run, "a\n", "b\n")
    settings.KRUNTIMES_RUN_LOG_LIMIT_BYTES = 2
    append(run, 4, "c\n")
    append(run, 6, "d\n")
    piece = logs.read_log(run, after_offset=2)
    assert piece.text == "[… 4 bytes truncated …]\nd\n"
    assert piece.gaps == ()


def test_an_older_attempt_is_readable(run):
    set_attempt(run, 2)
    append_lines(run, "first\n", attempt=1)
    append_lines(run, "second\n", attempt=2)
    assert logs.read_log(run).text == "second\n"
    assert logs.read_log(run, 1).text == "first\n"


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (0, ""),
        (1, "5\n"),
        (2, "4\n5\n"),
        (4, "2\n3\n4\n5\n"),
        (99, "1\n2\n3\n4\n5\n"),
    ],
)
def test_tail_lines(run, lines, expected):
    append_lines(run, "1\n2\n", "3\n", "4\n5\n")
    assert logs.read_log(run, tail_lines=lines).text == expected


def test_tail_reaching_back_to_the_truncation_includes_the_marker(run, settings):
    settings.KRUNTIMES_RUN_LOG_LIMIT_BYTES = 4
    append_lines(run, "1\n", "2\n", "3\n")
    assert logs.read_log(run, tail_lines=1).text == "3\n"
    assert logs.read_log(run, tail_lines=5).text == "[… 2 bytes truncated …]\n2\n3\n"


def test_tail_without_a_final_newline():
    assert logs.last_lines("a\nb\nc", 2) == "b\nc"
    assert logs.last_lines("only", 3) == "only"


def test_limit_bytes_cuts_the_text_never_inside_a_character(run):
    append_lines(run, "héllo\n", "world\n")
    assert logs.read_log(run, limit_bytes=3).text == "hé"
    assert logs.read_log(run, limit_bytes=2).text == "h"
    assert logs.read_log(run, limit_bytes=1000).text == "héllo\nworld\n"


# ---------------------------------------------------------------------------- following


class FakeTime:
    """A clock and sleep for followers: each sleep advances time and runs the next action."""

    def __init__(self, *actions) -> None:
        self.now = 0.0
        self.actions = list(actions)
        self.sleeps = 0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += max(seconds, 0.1)
        if self.actions:
            self.actions.pop(0)()

    def policy(self, **options) -> logs.FollowPolicy:
        return logs.FollowPolicy(sleep=self.sleep, clock=self.clock, **options)


def test_follow_yields_new_text_until_the_run_ends_and_stays_quiet(run):
    append(run, 0, "one\n")
    time = FakeTime(
        lambda: append(run, 4, "two\n"),
        lambda: set_attempt(run, 1, "Succeeded"),
        lambda: append(run, 8, "late\n"),
    )  # after completion, within the grace
    pieces = list(logs.follow_log(run, policy=time.policy(grace=1.0)))
    assert pieces == ["one\n", "two\n", "late\n"]
    assert time.now >= 1.0


def test_follow_of_a_finished_run_ends_after_the_grace(run):
    append(run, 0, "done\n")
    set_attempt(run, 1, "Failed")
    time = FakeTime()
    assert list(logs.follow_log(run, policy=time.policy(grace=0.5))) == ["done\n"]
    assert time.sleeps <= 7


def test_follow_of_an_older_attempt_ends(run):
    set_attempt(run, 2)
    append(run, 0, "old\n", attempt=1)
    time = FakeTime()
    assert list(logs.follow_log(run, 1, policy=time.policy(grace=0))) == ["old\n"]


def test_follow_stops_at_the_max_duration(run):
    time = FakeTime()
    assert list(logs.follow_log(run, policy=time.policy(max_seconds=1.0))) == []
    assert time.sleeps == 5  # 0.2 s polls for 1 s


def test_follow_honours_limit_bytes(run):
    append(run, 0, "abc\n")
    time = FakeTime(lambda: append(run, 4, "defgh\n"))
    assert "".join(logs.follow_log(run, limit_bytes=6, policy=time.policy())) == "abc\nde"


def test_follow_with_no_tail_lines_only_yields_what_is_new(run):
    append_lines(run, "old\n", "older\n")
    time = FakeTime(lambda: append(run, 10, "new\n"), lambda: set_attempt(run, 1, "Succeeded"))
    assert list(logs.follow_log(run, tail_lines=0, policy=time.policy(grace=0))) == ["new\n"]
    assert logs.read_log(run, tail_lines=0).next_offset == 14


def test_idle_pieces_mark_each_quiet_poll_and_change_no_text(run):
    time = FakeTime(lambda: append(run, 0, "one\n"))
    pieces = list(logs.follow_log(run, policy=time.policy(max_seconds=1.0), idle_pieces=True))
    assert "".join(pieces) == "one\n"
    assert pieces.count("") == len(pieces) - 1 >= 4  # one per quiet 0.2 s poll
