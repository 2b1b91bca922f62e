"""A real local HTTP endpoint for webhook tests: records each POST, answers a settable status."""

from __future__ import annotations

import hashlib
import hmac
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """A real HTTP endpoint recording what it got; answers ``status`` (settable)."""

    def __init__(self):
        self.requests: list[tuple[dict, bytes]] = []
        self.status = 200
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                self.send_response(receiver.status)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def signature_of(secret: str, body: bytes) -> str:
    """What a receiver computes to verify ``X-SynthOrg-Signature`` (the docs' snippet)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
