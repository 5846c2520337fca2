"""Ship a step's combined output to the control plane in chunks while it runs.

``write`` is called from the step's output-reading thread and only appends to a buffer; a
background thread sends ``scheduling.append_log`` chunks when ``flush_bytes`` are buffered or
``flush_interval`` has passed since the first unsent byte. Offsets and sizes are raw-byte
positions in the attempt's output; the text is decoded incrementally, so a multibyte character
split between reads lands whole in the next chunk. If the broker is down long enough for the
backlog to pass ``max_backlog_bytes``, the oldest unsent bytes are dropped (the offsets show the
gap). A chunk whose send fails (after the Reporter's own retries) is dropped too: the step's
local log file stays complete either way.
"""

from __future__ import annotations

import codecs
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from .protocol import APPEND_LOG_TASK, LogChunk, LogIdentity

log = logging.getLogger("runtimed.logship")

MiB = 1024 * 1024

# (task name, kwargs) -> delivered?
Send = Callable[[str, Mapping[str, Any]], bool]


class LogShipper:
    """Batches raw output into ``append_log`` chunks; ``write`` never blocks on the broker."""

    def __init__(
        self,
        send: Send,
        *,
        namespace: str,
        name: str,
        uid: str,
        attempt: int,
        pod_uid: str,
        flush_bytes: int = 65536,
        flush_interval: float = 0.25,
        max_backlog_bytes: int = 8 * MiB,
        clock: Callable[[], float] = time.monotonic,
        background: bool = True,
    ) -> None:
        self._send = send
        self._identity: LogIdentity = {
            "namespace": namespace,
            "name": name,
            "uid": uid,
            "attempt": attempt,
            "podUID": pod_uid,
        }
        self.flush_bytes = max(1, flush_bytes)
        self.flush_interval = flush_interval
        self.max_backlog_bytes = max(self.flush_bytes, max_backlog_bytes)
        self._clock = clock
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._cond = threading.Condition()
        self._pending = bytearray()  # raw bytes not yet taken for sending
        self._pending_offset = 0  # raw offset of _pending[0]
        self._first_unsent_at: float | None = None
        self._reset_decoder = False  # bytes were dropped: a partial character is garbage now
        self._dropping = False  # inside a drop episode (one warning per episode)
        self.total_bytes = 0
        self.dropped_bytes = 0
        self.failed_chunks = 0
        self._closing = False
        self._closed = False
        self._hold_tail = False
        # the last chunk, held back by close(hand_over_tail=True) to ride on the final report
        self.tail: LogChunk | None = None
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(target=self._run, name="runtimed-logship", daemon=True)
            self._thread.start()

    # ------------------------------------------------------------------ the reading thread

    def write(self, data: bytes) -> None:
        """Buffer ``data``; drops the oldest unsent bytes past the backlog bound. Never raises."""
        try:
            if not data:
                return
            with self._cond:
                if self._closing:
                    return
                self.total_bytes += len(data)
                if not self._pending:
                    self._first_unsent_at = self._clock()
                self._pending += data
                self._drop_over_backlog()
                self._cond.notify()
        except Exception:  # noqa: BLE001 - the step's output path must never fail
            log.exception("buffering step output for shipping failed")

    def _drop_over_backlog(self) -> None:
        excess = len(self._pending) - self.max_backlog_bytes
        if excess <= 0:
            self._dropping = False
            return
        del self._pending[:excess]
        self._pending_offset += excess
        self.dropped_bytes += excess
        self._reset_decoder = True
        if not self._dropping:
            log.warning(
                "Run %s attempt %s: log backlog over %d bytes (control plane "
                "unreachable?); dropping the oldest unsent output",
                self._identity["uid"],
                self._identity["attempt"],
                self.max_backlog_bytes,
            )
        self._dropping = True

    # ------------------------------------------------------------------ sending

    def ship_due(self) -> int:
        """Send every chunk that is due now; returns how many were sent (or tried)."""
        sent = 0
        while (batch := self._take(final=False)) is not None:
            self._ship(*batch)
            sent += 1
        return sent

    def flush(self) -> int:
        """Send everything buffered, due or not (the last chunk completes the decoding)."""
        sent = 0
        while (batch := self._take(final=True)) is not None:
            if batch[3] and self._hold_tail:
                self.tail = self._chunk(*batch)
                break
            self._ship(*batch)
            sent += 1
        return sent

    def _due(self) -> bool:
        if len(self._pending) >= self.flush_bytes:
            return True
        return (
            bool(self._pending)
            and self._first_unsent_at is not None
            and (self._clock() - self._first_unsent_at >= self.flush_interval)
        )

    def _take(self, *, final: bool) -> tuple[int, bytes, bool, bool] | None:
        """The next chunk's (offset, raw bytes, reset decoder?, last?), or None."""
        with self._cond:
            if not self._pending or not (final or self._due()):
                return None
            data = bytes(self._pending[: self.flush_bytes])
            del self._pending[: self.flush_bytes]
            offset = self._pending_offset
            self._pending_offset += len(data)
            if not self._pending:
                self._first_unsent_at = None
            reset, self._reset_decoder = self._reset_decoder, False
            return offset, data, reset, final and not self._pending

    def _chunk(self, offset: int, data: bytes, reset: bool, last: bool) -> LogChunk:
        if reset:
            self._decoder.reset()
        # a trailing incomplete character waits in the decoder for the next chunk
        text = self._decoder.decode(data, final=last)
        return {**self._identity, "offset": offset, "size": len(data), "text": text}

    def _ship(self, offset: int, data: bytes, reset: bool, last: bool) -> None:
        chunk = self._chunk(offset, data, reset, last)
        try:
            delivered = self._send(APPEND_LOG_TASK, {"chunk": chunk})
        except Exception:  # noqa: BLE001 - a broken sender only costs this chunk
            log.exception("sending a log chunk failed")
            delivered = False
        if not delivered:
            self.failed_chunks += 1
            log.warning(
                "Run %s attempt %s: dropped the log chunk at offset %d (%d bytes)",
                self._identity["uid"],
                self._identity["attempt"],
                offset,
                len(data),
            )

    # ------------------------------------------------------------------ the shipping thread

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._closing and not self._due():
                        self._cond.wait(self._wait_seconds())
                    closing = self._closing
                if closing:
                    self.flush()
                    return
                self.ship_due()
        except Exception:  # noqa: BLE001 - shipping is best effort; the local log is complete
            log.exception("the log shipping thread failed")

    def _wait_seconds(self) -> float | None:
        """How long until the buffered bytes are due by time (None: until a write)."""
        if self._first_unsent_at is None:
            return None
        return max(0.0, self.flush_interval - (self._clock() - self._first_unsent_at))

    # ------------------------------------------------------------------ the end

    def close(self, timeout: float = 5.0, *, hand_over_tail: bool = False) -> int:
        """Flush what is left, stop the thread; returns the total raw bytes written.

        With ``hand_over_tail`` the last chunk is not sent but left in :attr:`tail`, for the
        caller to send with its own final message (one message fewer for a short step).
        """
        with self._cond:
            if self._closed:
                return self.total_bytes
            self._hold_tail = hand_over_tail
            self._closed = self._closing = True
            self._cond.notify_all()
        if self._thread is None:
            self.flush()
        else:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning(
                    "Run %s attempt %s: log shipping did not finish within %gs; the "
                    "rest of the output is not shipped",
                    self._identity["uid"],
                    self._identity["attempt"],
                    timeout,
                )
        if self.dropped_bytes or self.failed_chunks:
            log.warning(
                "Run %s attempt %s: %d bytes of output dropped on the backlog bound, "
                "%d chunks not delivered",
                self._identity["uid"],
                self._identity["attempt"],
                self.dropped_bytes,
                self.failed_chunks,
            )
        return self.total_bytes
