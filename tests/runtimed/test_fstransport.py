"""The filesystem transport: a message is never seen half-written, and only one consumer
gets each message, however many poll the folder at once."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
import uuid

import pytest
from kombu import Connection

from runtimed.fstransport import TRANSPORT


def connection(folder) -> Connection:
    return Connection(
        "filesystem://",
        transport=TRANSPORT,
        transport_options={
            "data_folder_in": str(folder / "queue"),
            "data_folder_out": str(folder / "queue"),
            "processed_folder": str(folder / "processed"),
            "store_processed": False,
            "control_folder": str(folder / "control"),
            "polling_interval": 0.001,
        },
    )


@pytest.fixture
def folder(tmp_path):
    for sub in ("queue", "processed", "control"):
        (tmp_path / sub).mkdir()
    return tmp_path


@pytest.fixture
def name():
    # kombu remembers declared exchanges per process: each test's fresh control folder
    # needs a queue name of its own
    return f"q{uuid.uuid4().hex[:8]}"


def test_round_trip_leaves_no_files(folder, name):
    with connection(folder) as conn:
        queue = conn.SimpleQueue(name)
        queue.put({"n": 1})
        message = queue.get(timeout=2)
        message.ack()
        assert message.payload == {"n": 1}
        queue.close()
    assert os.listdir(folder / "queue") == []
    assert os.listdir(folder / "processed") == []


def test_a_half_written_message_is_not_read(folder, name):
    (folder / "queue" / f".partial-1_x.{name}.msg").write_bytes(b'{"bo')  # a writer mid-way
    with connection(folder) as conn:
        channel = conn.default_channel
        assert channel._size(name) == 0
        with pytest.raises(Exception) as empty:
            channel._get(name)
        assert type(empty.value).__name__ == "Empty"


def test_concurrent_consumers_get_every_message_exactly_once(folder, name):
    total, seen, lock = 400, [], threading.Lock()
    with connection(folder) as conn:
        producer = conn.SimpleQueue(name)
        for n in range(total):
            producer.put({"n": n})
        producer.close()

    def consume():
        with connection(folder) as conn:
            queue = conn.SimpleQueue(name)
            while True:
                try:
                    message = queue.get(timeout=0.5)
                except queue.Empty:
                    return
                message.ack()
                with lock:
                    seen.append(message.payload["n"])

    workers = [threading.Thread(target=consume) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert sorted(seen) == list(range(total))


def _write(folder, name: str, start: int, count: int) -> None:
    with connection(folder) as conn:
        queue = conn.SimpleQueue(name)
        for n in range(start, start + count):
            queue.put({"n": n, "pad": "x" * 20000})  # big enough to be caught mid-write


def _read(folder, name: str, results, stop) -> None:
    got, errors = [], 0
    with connection(folder) as conn:
        queue = conn.SimpleQueue(name)
        while True:
            try:
                message = queue.get(timeout=0.2)
            except queue.Empty:
                if stop.is_set():
                    break
                continue
            except Exception:  # noqa: BLE001 - kombu's own transport: a half-written file
                errors += 1
                continue
            message.ack()
            got.append(message.payload["n"])
    results.put((got, errors))


def test_processes_racing_never_lose_or_duplicate_a_message(folder, name):
    """Writers and readers in separate processes (kombu's own transport loses messages here:
    a reader claims a file its writer has created but not yet written)."""
    context = multiprocessing.get_context("fork")
    stop, results = context.Event(), context.Queue()
    readers = [context.Process(target=_read, args=(folder, name, results, stop)) for _ in range(3)]
    writers = [context.Process(target=_write, args=(folder, name, i * 400, 400)) for i in range(3)]
    for process in readers + writers:
        process.start()
    for writer in writers:
        writer.join(60)
    time.sleep(0.5)
    stop.set()
    collected = [results.get(timeout=60) for _ in readers]
    for reader in readers:
        reader.join(30)
    seen = sorted(n for got, _ in collected for n in got)
    assert sum(errors for _, errors in collected) == 0
    assert seen == list(range(1200))
