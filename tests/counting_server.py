"""A local HTTP server that counts the requests it answers: a test starts one, points the code under test
at its port, and asserts ``hits == 0`` to prove that no request left the simulation.

A module of its own (as ``chromium_paths``), imported by name from any test folder:
``from counting_server import counting_server``.
"""

from __future__ import annotations

import http.server
import threading
from contextlib import contextmanager
from typing import Iterator

__all__ = ["CountingServer", "counting_server"]


class CountingServer:
    """A running server on 127.0.0.1: ``port``, and ``hits``, the requests (any method) it has answered."""

    def __init__(self) -> None:
        owner = self
        self.hits = 0
        self._lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            def _count(self) -> None:
                with owner._lock:
                    owner.hits += 1
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _count  # noqa: N815

            def log_message(self, *a: object) -> None:
                pass

        self._srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.port: int = self._srv.server_address[1]
        self._thread = threading.Thread(target=self._srv.serve_forever, name="counting-server", daemon=True)

    def reset(self) -> None:
        with self._lock:
            self.hits = 0


@contextmanager
def counting_server() -> Iterator[CountingServer]:
    """A ``CountingServer`` serving until the ``with`` block ends (then shut down and its socket closed)."""
    server = CountingServer()
    server._thread.start()
    try:
        yield server
    finally:
        server._srv.shutdown()
        server._srv.server_close()
        server._thread.join(timeout=5)
