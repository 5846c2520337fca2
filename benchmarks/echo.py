"""The Celery baseline of ``bench runs``: a bare ``bench.echo`` round trip on the same broker.

A separate, tiny Celery app, loaded only by the bench's own worker
(``celery -A benchmarks.echo worker -Q bench.echo --pool threads``): the portal's control
worker never imports this module, so ``bench.echo`` exists nowhere else. The app reads the same
``CELERY_*`` Django settings as the portal's app (broker URL and transport options, e.g. the
filesystem transport's polling interval), so both round trips ride the same broker the same way.

The task publishes its token to the reply queue the bench names (the default exchange: the
routing key is the queue); the bench reads replies with kombu's ``SimpleQueue``. No result
backend, so it works on the filesystem broker and on Redis alike.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable

from celery import Celery
from kombu import Queue

ECHO_QUEUE = "bench.echo"
ECHO_TASK = "bench.echo"
REPLY_PREFIX = "bench.replies."

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

# no Django fixup: the echo worker never touches the database (no django.setup())
app = Celery("bench-echo", set_as_current=False, fixups=[])
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    task_default_queue=ECHO_QUEUE,
    task_queues=[Queue(ECHO_QUEUE)],
    task_ignore_result=True,
    task_always_eager=False,  # the test settings' eager mode would make it no round trip
    # as the portal's app does
    task_acks_late=True,
    worker_prefetch_multiplier=4,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    broker_connection_timeout=2,
)


@app.task(name=ECHO_TASK, ignore_result=True)
def echo(token: str, reply_to: str) -> None:
    """Send ``token`` back on ``reply_to``."""
    with app.producer_or_acquire() as producer:
        producer.publish(
            {"token": token},
            exchange="",
            routing_key=reply_to,
            serializer="json",
            retry=True,
            retry_policy={"max_retries": 2, "interval_start": 0, "interval_step": 0.2},
        )


# ``python -m celery`` after ``django.setup()``: importing ``benchmarks`` (the package of
# this module) loads models, so the app registry must be ready before ``-A`` imports it.
LAUNCHER = (
    "import sys, django; django.setup(); from celery.bin.celery import main; sys.exit(main())"
)


def worker_argv(python: str, concurrency: int, hostname: str) -> list[str]:
    """The bench's echo worker: threads pool, ``concurrency`` slots, ``bench.echo`` only."""
    return [
        python,
        "-c",
        LAUNCHER,
        "-A",
        "benchmarks.echo",
        "worker",
        "-Q",
        ECHO_QUEUE,
        "--pool",
        "threads",
        "--concurrency",
        str(concurrency),
        "-n",
        f"{hostname}@%h",
        "--loglevel",
        "INFO",
        "--without-mingle",
        "--without-gossip",
        "--without-heartbeat",
    ]


def is_polling_transport(url: str) -> bool:
    """Transports that poll (filesystem): a reply is seen up to one get() timeout late."""
    return url.startswith(("filesystem://", "memory://"))


class Lost(TimeoutError):
    """No reply came back in time."""


class EchoClient:
    """Round trips of ``bench.echo``: send with a token, wait for the token on the reply queue.

    One reader thread owns the kombu connection of the reply queue and stamps each reply with
    ``perf_counter()`` the moment it is read; ``round_trip`` may be called from many threads.
    ``poll`` is the reply queue's get() timeout on polling transports (the filesystem broker
    polls at most that often, as the Runs side polls the database).
    """

    def __init__(self, *, poll: float = 0.003) -> None:
        self.reply_queue = f"{REPLY_PREFIX}{uuid.uuid4().hex[:12]}"
        url = app.conf.broker_url
        self.get_timeout = poll if is_polling_transport(url) else 1.0
        self._lock = threading.Lock()
        self._waiting: dict[str, tuple[threading.Event, list[float]]] = {}
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        # Replies that could not be read (kombu's own filesystem transport lost some before
        # runtimed.fstransport; kept as a check that none are lost any more).
        self.unreadable: list[str] = []
        self._thread = threading.Thread(target=self._read, name="bench-echo-replies", daemon=True)

    def start(self, timeout: float = 10.0) -> None:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("the reply queue reader did not start")
        if self._error is not None:
            raise RuntimeError(f"cannot read the reply queue: {self._error}")

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def _read(self) -> None:
        try:
            with app.connection_for_read() as conn:
                replies = conn.SimpleQueue(self.reply_queue, no_ack=True)
                self._ready.set()
                try:
                    while not self._stop.is_set():
                        try:
                            message = replies.get(block=True, timeout=self.get_timeout)
                        except replies.Empty:
                            continue
                        except Exception as exc:  # noqa: BLE001 - see unreadable
                            self.unreadable.append(f"{type(exc).__name__}: {exc}")
                            time.sleep(self.get_timeout)
                            continue
                        seen = time.perf_counter()
                        token = (message.payload or {}).get("token")
                        with self._lock:
                            waiter = self._waiting.pop(token, None)
                        if waiter is not None:
                            waiter[1].append(seen)
                            waiter[0].set()
                finally:
                    try:
                        replies.queue.maybe_bind(conn.default_channel)
                        replies.queue.delete()
                    except Exception:  # noqa: BLE001 - a leftover reply queue is harmless
                        pass
                    replies.close()
        except BaseException as exc:  # noqa: BLE001 - reported to start() / round_trip()
            self._error = exc
            self._ready.set()

    def round_trip(self, token: str, timeout: float) -> float:
        """Seconds from just before the send to the reply being read; raises TimeoutError."""
        if self._error is not None:
            raise RuntimeError(f"the reply queue reader failed: {self._error}")
        event, seen = threading.Event(), []
        with self._lock:
            self._waiting[token] = (event, seen)
        started = time.perf_counter()
        app.send_task(ECHO_TASK, args=(token, self.reply_queue), queue=ECHO_QUEUE)
        if not event.wait(timeout):
            with self._lock:
                self._waiting.pop(token, None)
            raise Lost(f"no echo reply within {timeout:g} s")
        return seen[0] - started

    def wait_ready(self, timeout: float, alive: Callable[[], None] = lambda: None) -> float:
        """One round trip that succeeds within ``timeout`` (the worker is up); ``alive`` may
        raise when the worker died. Returns the seconds it took."""
        deadline = time.monotonic() + timeout
        attempt = 0
        while True:
            alive()
            attempt += 1
            try:
                return self.round_trip(f"ready-{attempt}", timeout=2.0)
            except TimeoutError:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"the echo worker answered no round trip within {timeout:g} s"
                    ) from None
