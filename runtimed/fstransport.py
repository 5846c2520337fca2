"""kombu's filesystem transport with atomic messages, for the embedded default broker.

kombu 5.x writes a message file in place (create, then write) and reads it without the lock,
so a consumer polling at the wrong moment reads an empty file: the message is lost and the
worker dies on the JSON error. Here a message is written under a hidden temporary name and
renamed into the queue folder (readers only ever see whole files), and a consumer claims a
message by renaming it into the processed folder on the same filesystem (exactly one
consumer wins) before reading and removing it.
"""

from __future__ import annotations

import os
import uuid
from queue import Empty
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

TRANSPORT = "runtimed.fstransport:Transport"
_PARTIAL = ".partial-"


class Channel(filesystem.Channel):
    # kombu's filesystem.Channel names AbstractChannel._put's ``message`` ``payload``; its stub
    # ignores that mismatch too
    def _put(  # type: ignore[override]
        self, queue: str, payload: dict[str, Any], **kwargs: Any
    ) -> None:
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        partial = os.path.join(self.data_folder_out, _PARTIAL + name)
        try:
            with open(partial, "wb") as handle:
                handle.write(str_to_bytes(dumps(payload)))
            os.rename(partial, os.path.join(self.data_folder_out, name))
        except OSError as exc:
            raise ChannelError(f"cannot add message {name!r} to the queue") from exc

    def _get(self, queue: str, timeout: float | None = None) -> dict[str, Any]:
        # ``timeout`` is AbstractChannel's; kombu never passes it to a filesystem channel
        wanted = f"{queue}.msg"
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.startswith(_PARTIAL) or name.partition(".")[2] != wanted:
                continue
            claimed = os.path.join(self.processed_folder, f"{os.getpid()}-{name}")
            try:
                os.rename(os.path.join(self.data_folder_in, name), claimed)
            except OSError:  # another consumer claimed it first
                continue
            try:
                with open(claimed, "rb") as handle:
                    payload = handle.read()
            finally:
                if not self.store_processed:
                    os.remove(claimed)
            message: dict[str, Any] = loads(bytes_to_str(payload))
            return message
        raise Empty()

    def _size(self, queue: str) -> int:
        wanted = f"{queue}.msg"
        return sum(
            1
            for name in os.listdir(self.data_folder_in)
            if not name.startswith(_PARTIAL) and name.partition(".")[2] == wanted
        )


class Transport(filesystem.Transport):
    Channel = Channel
