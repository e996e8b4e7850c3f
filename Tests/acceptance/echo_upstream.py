#!/usr/bin/env python3
"""A stand-in for the Python mock cloud behind MOCKCLOUD_UPSTREAM.

Answers every request with 200 and a JSON description of what it received,
so a test can check that nginx passed method, path, query, headers and body
through unchanged:

    {"method": "PUT", "target": "/other?x=1", "headers": [["X-User-Key", "u1"], ...],
     "body": "<the body, UTF-8>"}

Usage: echo_upstream.py PORT   (binds 127.0.0.1 only; stop it by its PID)
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        reply = json.dumps({
            "method": self.command,
            "target": self.path,
            "headers": [[name, value] for name, value in self.headers.items()],
            "body": body.decode("utf-8", "replace"),
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Echo-Upstream", "yes")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(reply)

    do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = do_OPTIONS = answer

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Echo).serve_forever()
