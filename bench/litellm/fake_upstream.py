#!/usr/bin/env python3
"""A tiny OpenAI-compatible upstream for benchmarks and cross-checks.

    python3 bench/litellm/fake_upstream.py [--port 18080] [--host 127.0.0.1] [--delay-ms 0]
        [--impl auto|aiohttp|stdlib]

Answers
* ``POST /v1/chat/completions`` (and ``/chat/completions``): a fixed chat completion
  (``"content": "hi"``, usage 3+1 tokens) echoing the request's ``model``; with ``"stream": true``
  the same as SSE chunks ending in ``data: [DONE]``.
* ``GET /v1/models``: the requested-model list the proxies expect; ``GET /health``: ``ok``.
Anything else is 404.

``--delay-ms`` sleeps before answering (0 = TensorZero-style zero-latency mock).
``--impl auto`` uses aiohttp when importable (the litellm venv has it; ~several thousand req/s on
one core), else the stdlib ThreadingHTTPServer (fine for a few hundred req/s). Prints
``fake upstream listening on http://HOST:PORT/v1 (impl, pid N)`` once ready; stops on SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

COMPLETION_PATHS = ("/v1/chat/completions", "/chat/completions")


def completion(model: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": "fp_fake",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "hi", "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
        },
        separators=(",", ":"),
    ).encode()


def stream_chunks(model: str) -> list[bytes]:
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
    deltas = [
        ({"role": "assistant", "content": ""}, None),
        ({"content": "hi"}, None),
        ({}, "stop"),
    ]
    out = []
    for delta, finish in deltas:
        chunk = dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])
        out.append(b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return out


def models() -> bytes:
    return json.dumps(
        {"object": "list", "data": [{"id": "gpt-4o", "object": "model", "created": 0, "owned_by": "fake"}]}
    ).encode()


def parse(body: bytes) -> tuple[str, bool]:
    try:
        req = json.loads(body or b"{}")
        return str(req.get("model", "gpt-4o")), bool(req.get("stream", False))
    except (ValueError, AttributeError):
        return "gpt-4o", False


def serve_aiohttp(host: str, port: int, delay: float) -> None:
    import asyncio

    from aiohttp import web

    async def chat(request: web.Request) -> web.StreamResponse:
        model, stream = parse(await request.read())
        if delay:
            await asyncio.sleep(delay)
        if not stream:
            return web.Response(body=completion(model), content_type="application/json")
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        for chunk in stream_chunks(model):
            await resp.write(chunk)
        await resp.write_eof()
        return resp

    async def list_models(_request: web.Request) -> web.Response:
        return web.Response(body=models(), content_type="application/json")

    async def health(_request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    for path in COMPLETION_PATHS:
        app.router.add_post(path, chat)
    app.router.add_get("/v1/models", list_models)
    app.router.add_get("/health", health)

    def ready(*_args) -> None:
        print(f"fake upstream listening on http://{host}:{port}/v1 (aiohttp, pid {os.getpid()})", flush=True)

    # access_log=None: no per-request logging.
    web.run_app(app, host=host, port=port, access_log=None, print=ready, handle_signals=True)


def serve_stdlib(host: str, port: int, delay: float) -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive
        # Headers and body go out in separate writes: without TCP_NODELAY, Nagle + delayed ACK
        # stall every keep-alive response by ~40 ms.
        disable_nagle_algorithm = True

        def log_message(self, *_args) -> None:  # no per-request logging
            pass

        def send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.split("?")[0] not in COMPLETION_PATHS:
                return self.send(404, b'{"error":{"message":"not found"}}')
            model, stream = parse(body)
            if delay:
                time.sleep(delay)
            if not stream:
                return self.send(200, completion(model))
            data = b"".join(stream_chunks(model))
            self.send(200, data, "text/event-stream")

        def do_GET(self) -> None:  # noqa: N802
            path = self.path.split("?")[0]
            if path == "/v1/models":
                return self.send(200, models())
            if path == "/health":
                return self.send(200, b"ok", "text/plain")
            self.send(404, b'{"error":{"message":"not found"}}')

    ThreadingHTTPServer.daemon_threads = True
    server = ThreadingHTTPServer((host, port), Handler)

    def on_term(*_args) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    print(f"fake upstream listening on http://{host}:{port}/v1 (stdlib, pid {os.getpid()})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def main() -> None:
    ap = argparse.ArgumentParser(description="tiny OpenAI-compatible upstream")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=18080)
    ap.add_argument("--delay-ms", type=float, default=0.0)
    ap.add_argument("--impl", choices=("auto", "aiohttp", "stdlib"), default="auto")
    args = ap.parse_args()
    impl = args.impl
    if impl == "auto":
        try:
            import aiohttp  # noqa: F401

            impl = "aiohttp"
        except ImportError:
            impl = "stdlib"
    delay = args.delay_ms / 1000.0
    if impl == "aiohttp":
        serve_aiohttp(args.host, args.port, delay)
    else:
        serve_stdlib(args.host, args.port, delay)
    sys.exit(0)


if __name__ == "__main__":
    main()
