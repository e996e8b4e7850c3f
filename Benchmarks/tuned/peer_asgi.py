"""The stock Python peer's own /user/settings handlers as an ASGI app: what
a Python developer gets by putting the same code under uvicorn with uvloop
and httptools (`make bench`'s tuned peer, Benchmarks/bench.py).

    TUNED_PEER=path/to/python_mock_cloud.py TUNED_PEER_ROOT=DATA \
      .build/bench-venv/bin/python -m uvicorn peer_asgi:app --app-dir Benchmarks/tuned \
      --workers 2 --loop uvloop --http httptools --ssl-certfile C --ssl-keyfile K

The peer file is imported as it is, from where PEER names it; its
handler methods (`_user_settings_get`, `_user_settings_put`) run on a
handler object made without a connection, with the request's headers and
body. Nothing of their file work changes: the same paths, the same
`write_text` without fsync, the same JSON.
"""
import importlib.util
import json
import os
import pathlib


def _load_peer(path):
    spec = importlib.util.spec_from_file_location("python_mock_cloud", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PEER = _load_peer(os.environ["TUNED_PEER"])
PEER.Handler.root = pathlib.Path(os.environ["TUNED_PEER_ROOT"])
ROUTE = "/user/settings"


class Headers(dict):
    """The request's headers by lower-case name; `get` takes any case, as
    http.server's headers do."""

    def get(self, name, default=None):
        return super().get(name.lower(), default)


def handle(method, path, headers, body):
    """(status, payload) of the peer's handler for this request."""
    if path != ROUTE or method not in ("GET", "PUT"):
        return 404, {"error": "not found"}
    handler = PEER.Handler.__new__(PEER.Handler)
    handler.headers = headers
    if method == "GET":
        return handler._user_settings_get()
    return handler._user_settings_put(body)


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = bytearray()
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    headers = Headers((name.decode("latin-1").lower(), value.decode("latin-1")) for name, value in scope["headers"])
    status, payload = handle(scope["method"], scope["path"], headers, bytes(body))
    answer = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]})
    await send({"type": "http.response.body", "body": answer})
