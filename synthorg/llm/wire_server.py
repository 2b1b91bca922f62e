"""A local HTTP server on a thread that serves an OpenAI-wire API under ``/v1`` (pure: no
Django import).

Two servers share it: the demo's stand-in model (``memory/interfaces/demo_llm.py``, run by
``make demo``) and the tests' provider stand-in (``tests/support/openai_server.py``). Each
brings its request handler; this holds the part they had copied: bind (IPv4 or IPv6, port 0
for a free one), serve on a daemon thread, ``base_url``, stop, and use as a context manager.
"""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: How often the serving loop checks for a stop (``serve_forever`` polls ten times slower by
#: default): :meth:`WireServer.stop` returns within it (tests start and stop hundreds).
STOP_POLL_SECONDS = 0.05


class _Server(ThreadingHTTPServer):
    # A handler still answering (or sleeping out a scripted delay) must not block stop().
    daemon_threads = True

    def __init__(self, host: str, port: int, handler: type[BaseHTTPRequestHandler]) -> None:
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__((host, port), handler)


class WireServer:
    """Serves ``handler()``'s request handler class on ``host:port`` from a thread."""

    thread_name = "openai-wire-server"

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host, self._port = host, port
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    def handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server is not running")
        host, port = self._httpd.server_address[:2]
        if isinstance(host, bytes):
            host = host.decode()
        return f"http://{f'[{host}]' if ':' in host else host}:{port}/v1"

    def start(self) -> None:
        if self._httpd is not None:
            return
        self._httpd = _Server(self._host, self._port, self.handler())
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": STOP_POLL_SECONDS},
            name=self.thread_name,
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self.stopping()
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def stopping(self) -> None:
        """Called as :meth:`stop` begins, before the server shuts down (a subclass wakes
        handlers that wait)."""
