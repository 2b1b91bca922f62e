"""A real HTTP server speaking the OpenAI wire format, for testing HTTP clients end to end.

It listens on ``127.0.0.1`` on a free port, in a background thread, and serves
``POST /v1/embeddings``, ``POST /v1/chat/completions`` and ``GET /v1/models``. By default it
answers like a well-behaved provider (deterministic fake embeddings, a fixed chat reply, one
listed model); a test changes that per endpoint by queueing scripted responses (played once
each, in order) or by installing a handler. Every request is recorded so tests can assert
what the client sent.

    with FakeOpenAIServer(embedding_dims=8) as server:
        server.enqueue(server.EMBEDDINGS, ScriptedResponse(status=429))
        client = SomeClient(base_url=server.base_url)
        ...
        assert len(server.requests_to(server.EMBEDDINGS)) == 2
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from synthorg.llm.wire_server import WireServer


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it. Header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class ScriptedResponse:
    """What to answer. ``body`` (raw bytes) wins over ``json``; ``delay`` waits before answering;
    ``trickle`` sends the body one byte every ``trickle`` seconds (a slow, never-idle stream);
    ``drop`` closes the connection without answering (a server process that died)."""

    status: int = 200
    json: Any = None
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    trickle: float = 0.0
    drop: bool = False


Handler = Callable[[RecordedRequest], ScriptedResponse]


def fake_embedding(text: str, dims: int) -> list[float]:
    """A deterministic, non-normalised vector for ``text`` (same text, same vector)."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i % len(digest)] - 127.5) / 127.5 for i in range(dims)]


def embeddings_payload(
    vectors: Sequence[Sequence[float]], *, model: str = "fake-embedding", order: Sequence[int] = ()
) -> dict[str, Any]:
    """An OpenAI ``/embeddings`` response body; ``order`` lists indexes in the order to emit."""
    indexes = list(order) or list(range(len(vectors)))
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": index, "embedding": list(vectors[index])}
            for index in indexes
        ],
        "model": model,
        "usage": {"prompt_tokens": len(vectors), "total_tokens": len(vectors)},
    }


def chat_completion_payload(
    content: str | None,
    *,
    model: str = "fake-chat",
    finish_reason: str = "stop",
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    tool_calls: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An OpenAI ``/chat/completions`` (non-streaming) response body with one choice."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def error_payload(
    message: str, *, type_: str = "invalid_request_error", code: str | None = None
) -> dict[str, Any]:
    """An OpenAI-style error body, as sent with 4xx/5xx statuses."""
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


class FakeOpenAIServer(WireServer):
    """An OpenAI-compatible HTTP server on 127.0.0.1 for tests; see the module docstring.

    ``base_url`` ends in ``/v1`` (pass it to clients as the API root). Thread-safe: requests are
    served concurrently, and queues, handlers and the request log may be changed while running.
    """

    EMBEDDINGS = "/v1/embeddings"
    CHAT_COMPLETIONS = "/v1/chat/completions"
    MODELS = "/v1/models"  # GET: the model list (``models``; default ``["fake-chat"]``)
    thread_name = "fake-openai-server"

    def __init__(
        self,
        *,
        embedding_dims: int = 8,
        chat_reply: str = "ok",
        models: Sequence[str] = ("fake-chat",),
    ) -> None:
        self.embedding_dims = embedding_dims
        self.chat_reply = chat_reply
        self.models = list(models)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._requests: list[RecordedRequest] = []
        self._queues: dict[str, deque[ScriptedResponse]] = {
            self.EMBEDDINGS: deque(),
            self.CHAT_COMPLETIONS: deque(),
            self.MODELS: deque(),
        }
        self._handlers: dict[str, Handler] = {
            self.EMBEDDINGS: self._default_embeddings,
            self.CHAT_COMPLETIONS: self._default_chat_completion,
            self.MODELS: self._default_models,
        }
        super().__init__(host="127.0.0.1", port=0)

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return _make_request_handler(self)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [request for request in self.requests if request.path == path]

    def enqueue(self, path: str, *responses: ScriptedResponse) -> None:
        """Answer the next requests to ``path`` with ``responses``, once each, in order."""
        with self._lock:
            self._queues.setdefault(path, deque()).extend(responses)

    def set_handler(self, path: str, handler: Handler) -> None:
        """Answer requests to ``path`` (once its queue is empty) by calling ``handler``."""
        with self._lock:
            self._handlers[path] = handler

    def start(self) -> None:
        self._stopping.clear()
        super().start()

    def stopping(self) -> None:
        self._stopping.set()

    def handle(self, request: RecordedRequest) -> ScriptedResponse:
        """Record ``request`` and choose its response (called from the request threads)."""
        with self._lock:
            self._requests.append(request)
            queue = self._queues.get(request.path)
            if queue:
                return queue.popleft()
            handler = self._handlers.get(request.path)
        if handler is None:
            return ScriptedResponse(
                status=404, json=error_payload(f"no route {request.path}", code="not_found")
            )
        return handler(request)

    def wait_unless_stopped(self, seconds: float) -> bool:
        """Sleep ``seconds``; return ``True`` early if the server is stopping."""
        return self._stopping.wait(seconds)

    def _default_embeddings(self, request: RecordedRequest) -> ScriptedResponse:
        body = request.json()
        inputs = body["input"]
        if isinstance(inputs, str):
            inputs = [inputs]
        vectors = [fake_embedding(text, self.embedding_dims) for text in inputs]
        return ScriptedResponse(json=embeddings_payload(vectors, model=body.get("model", "")))

    def _default_models(self, request: RecordedRequest) -> ScriptedResponse:
        return ScriptedResponse(
            json={
                "object": "list",
                "data": [{"id": m, "object": "model", "owned_by": "fake"} for m in self.models],
            }
        )

    def _default_chat_completion(self, request: RecordedRequest) -> ScriptedResponse:
        model = request.json().get("model", "fake-chat")
        return ScriptedResponse(json=chat_completion_payload(self.chat_reply, model=model))


def _make_request_handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class _RequestHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Idle keep-alive connections end on their own instead of holding a thread forever.
        timeout = 5

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = RecordedRequest(
                method="POST",
                path=self.path,
                headers={name.lower(): value for name, value in self.headers.items()},
                body=self.rfile.read(length),
            )
            self._send(server.handle(request))

        def do_GET(self) -> None:
            if self.path != server.MODELS:
                self._send(ScriptedResponse(status=405, json=error_payload("use POST")))
                return
            request = RecordedRequest(
                method="GET",
                path=self.path,
                headers={name.lower(): value for name, value in self.headers.items()},
                body=b"",
            )
            self._send(server.handle(request))

        def _send(self, response: ScriptedResponse) -> None:
            if response.drop:
                self.close_connection = True
                return
            if response.delay and server.wait_unless_stopped(response.delay):
                self.close_connection = True
                return
            if response.body is not None:
                payload = response.body
            else:
                payload = json.dumps(response.json).encode()
            try:
                self.send_response(response.status)
                headers = {"Content-Type": "application/json", **response.headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if not response.trickle:
                    self.wfile.write(payload)
                    return
                self.wfile.flush()
                for i in range(len(payload)):
                    if server.wait_unless_stopped(response.trickle):
                        self.close_connection = True
                        return
                    self.wfile.write(payload[i : i + 1])
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (e.g. its timeout fired during a scripted delay)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return _RequestHandler
