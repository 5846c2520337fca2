"""LogShipper: batching by size and time, raw-byte offsets, UTF-8 split across reads, backlog
drops, and close flushing everything; time is a fake clock, flushing is driven by the test."""

from __future__ import annotations

import threading

from runtimed.logship import APPEND_LOG_TASK, LogShipper

IDENTITY = {"namespace": "default", "name": "build", "uid": "u-1", "attempt": 2, "pod_uid": "p-1"}


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Collector:
    """A fake ``send``: records chunks; ``fail`` makes the next sends report failure."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.fail = False
        self.sent = threading.Event()

    def __call__(self, name: str, kwargs: dict) -> bool:
        if self.fail:
            return False
        self.calls.append((name, kwargs))
        self.sent.set()
        return True

    @property
    def chunks(self) -> list[dict]:
        return [kwargs["chunk"] for _name, kwargs in self.calls]

    @property
    def text(self) -> str:
        return "".join(chunk["text"] for chunk in self.chunks)


def shipper(send, clock=None, **options) -> LogShipper:
    return LogShipper(send, **IDENTITY, clock=clock or FakeClock(), background=False, **options)


def test_nothing_is_sent_before_the_size_or_the_interval_is_reached():
    send, clock = Collector(), FakeClock()
    ship = shipper(send, clock, flush_bytes=10, flush_interval=0.25)
    ship.write(b"hello")
    clock.now += 0.2
    assert ship.ship_due() == 0 and send.calls == []

    clock.now += 0.05
    assert ship.ship_due() == 1
    assert send.calls == [
        (
            APPEND_LOG_TASK,
            {
                "chunk": {
                    "namespace": "default",
                    "name": "build",
                    "uid": "u-1",
                    "attempt": 2,
                    "podUID": "p-1",
                    "offset": 0,
                    "size": 5,
                    "text": "hello",
                }
            },
        )
    ]


def test_a_full_buffer_is_due_at_once_in_chunks_of_flush_bytes():
    send = Collector()
    ship = shipper(send, flush_bytes=4, flush_interval=60)
    ship.write(b"abcdefghij")
    assert ship.ship_due() == 2  # two full chunks; the last 2 bytes wait for time or more
    assert [(c["offset"], c["size"], c["text"]) for c in send.chunks] == [
        (0, 4, "abcd"),
        (4, 4, "efgh"),
    ]


def test_the_interval_counts_from_the_first_unsent_byte():
    send, clock = Collector(), FakeClock()
    ship = shipper(send, clock, flush_bytes=100, flush_interval=1.0)
    ship.write(b"a")
    clock.now += 0.9
    ship.write(b"b")  # does not restart the timer
    clock.now += 0.1
    assert ship.ship_due() == 1
    ship.write(b"c")
    clock.now += 0.5
    assert ship.ship_due() == 0  # a fresh timer for the next byte
    assert send.text == "ab"


def test_offsets_are_contiguous_raw_byte_positions():
    send, clock = Collector(), FakeClock()
    ship = shipper(send, clock, flush_bytes=7, flush_interval=0.1)
    for piece in (b"line one\n", b"2\n", b"the third line\n"):
        ship.write(piece)
        clock.now += 0.2
        ship.ship_due()
    position = 0
    for chunk in send.chunks:
        assert chunk["offset"] == position
        position += chunk["size"]
    assert position == len(b"line one\n2\nthe third line\n")
    assert send.text == "line one\n2\nthe third line\n"


def test_a_multibyte_character_split_across_reads_stays_whole():
    send, clock = Collector(), FakeClock()
    ship = shipper(send, clock, flush_bytes=100, flush_interval=0.1)
    data = "é€😀!".encode()
    for cut in (1, 3, 6, 8):  # every cut lands inside a character
        ship.write(data[:cut])
        data = data[cut:]
        clock.now += 0.2
        ship.ship_due()
    ship.write(data)
    ship.close()
    assert send.text == "é€😀!"
    assert "\ufffd" not in send.text
    assert sum(chunk["size"] for chunk in send.chunks) == len("é€😀!".encode())
    assert send.chunks[0] == {**send.chunks[0], "offset": 0, "size": 1, "text": ""}


def test_a_chunk_boundary_inside_a_character_moves_it_to_the_next_chunk():
    send = Collector()
    ship = shipper(send, flush_bytes=2, flush_interval=60)
    ship.write("aé".encode() + b"b")  # a, 0xC3 | 0xA9, b
    ship.close()
    assert [(c["offset"], c["size"], c["text"]) for c in send.chunks] == [(0, 2, "a"), (2, 2, "éb")]


def test_invalid_utf8_is_replaced_not_fatal():
    send = Collector()
    ship = shipper(send)
    ship.write(b"ok \xff\xfe end")
    assert ship.close() == 9
    assert send.text == "ok \ufffd\ufffd end"


def test_a_backlog_over_the_bound_drops_the_oldest_unsent_bytes(caplog):
    send, clock = Collector(), FakeClock()
    ship = shipper(send, clock, flush_bytes=4, flush_interval=0.1, max_backlog_bytes=8)
    ship.write(b"0123")
    clock.now += 0.2
    ship.ship_due()  # "0123" went out
    for piece in (b"4567", b"89ab", b"cdef"):  # the broker is down: nothing is shipped
        ship.write(piece)
    assert "dropping the oldest unsent output" in caplog.text
    assert ship.dropped_bytes == 4
    ship.close()
    assert [(c["offset"], c["size"], c["text"]) for c in send.chunks] == [
        (0, 4, "0123"),
        (8, 4, "89ab"),
        (12, 4, "cdef"),
    ]  # the gap: 4..8
    assert ship.total_bytes == 16


def test_dropping_inside_a_character_resets_the_decoder():
    send, clock = Collector(), FakeClock()
    ship = shipper(send, clock, flush_bytes=2, flush_interval=0.1, max_backlog_bytes=2)
    ship.write(b"a\xc3")  # "a" and half of "é"
    ship.ship_due()
    ship.write(b"\xa9xyz")  # the backlog keeps "yz": the rest of "é" and "x" are dropped
    ship.close()
    assert [(c["offset"], c["text"]) for c in send.chunks] == [(0, "a"), (4, "yz")]


def test_a_failed_send_drops_that_chunk_and_the_next_one_goes_out(caplog):
    send, clock = Collector(), FakeClock()
    ship = shipper(send, clock, flush_bytes=100, flush_interval=0.1)
    ship.write(b"lost ")
    clock.now += 0.2
    send.fail = True
    ship.ship_due()
    send.fail = False
    ship.write(b"kept")
    ship.close()
    assert [(c["offset"], c["text"]) for c in send.chunks] == [(5, "kept")]
    assert ship.failed_chunks == 1
    assert "dropped the log chunk at offset 0" in caplog.text


def test_a_raising_send_never_reaches_the_writer():
    def explode(name, kwargs):
        raise ConnectionError("broker down")

    ship = shipper(explode, flush_bytes=1)
    ship.write(b"x")
    ship.ship_due()
    assert ship.close() == 1


def test_close_flushes_everything_and_returns_the_total():
    send = Collector()
    ship = shipper(send, flush_bytes=1000, flush_interval=3600)
    ship.write(b"partial line without newline")
    ship.write(b"")
    assert ship.close() == 28
    assert send.text == "partial line without newline"
    assert ship.close() == 28  # closing twice is harmless
    ship.write(b"after close")  # ignored
    assert ship.total_bytes == 28


def test_the_background_thread_ships_by_time_and_close_flushes_the_rest():
    send = Collector()
    ship = LogShipper(send, **IDENTITY, flush_bytes=1 << 20, flush_interval=0.01)
    ship.write(b"early ")
    assert send.sent.wait(5), "the interval flush never happened"
    ship.write(b"late")
    assert ship.close(timeout=5) == 10
    assert send.text == "early late"
    assert [c["offset"] for c in send.chunks] == [0, 6]
