"""``python -m runtimed.runtime_server bash|python --listen unix:/path``: a built-in Runtime
Server until SIGTERM/SIGINT, which cancels every running execution (their trees are killed)."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from types import FrameType

from .programs import BUILT_IN
from .server import serve


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m runtimed.runtime_server")
    parser.add_argument("runtime", choices=sorted(BUILT_IN))
    parser.add_argument("--listen", default="127.0.0.1:9091", help="unix:/path or host:port")
    options = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    server, servicer = serve(options.runtime, options.listen)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    stop.wait()
    servicer.cancel_all()
    server.stop(grace=1).wait()


if __name__ == "__main__":
    main()
