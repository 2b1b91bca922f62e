"""A real TCP server that accepts connections and never answers (a hung embedder or LLM).

It listens on ``127.0.0.1`` on a free port, accepts every connection in a background thread,
reads what the client sends and never writes a byte back. ``connections`` counts accepted
connections, so a test can tell whether a client called it at all.

    with HangingServer() as server:
        client = SomeClient(base_url=server.base_url)
"""

from __future__ import annotations

import socket
import threading


class HangingServer:
    def __init__(self) -> None:
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept_forever, daemon=True)
        self.connections = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"

    def __enter__(self) -> HangingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopped.set()
        self._listener.close()
        with self._lock:
            for conn in self._held:
                conn.close()
        self._thread.join(timeout=5)

    def _accept_forever(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._held.append(conn)  # keep it open, never answer
                self.connections += 1
