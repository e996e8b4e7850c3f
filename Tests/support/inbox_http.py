"""Requests to a stack over HTTPS and the whole state of a key's inbox, for
the Python suites that compare a client's copy with the server
(Tests/acceptance/sync_client.py, Tests/client/run.py). The caller's TLS
context says how the server is verified.

Python 3 standard library only.
"""
import http.client
import json
import urllib.parse


class InboxHTTP:
    def __init__(self, host, port, context):
        self.host, self.port, self.context = host, port, context

    def request(self, method, path, key, device=None, body=None, headers=()):
        """(status, JSON answer or None); a connection per request."""
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=30)
        try:
            h = {"X-User-Key": key, **dict(headers)}
            if device:
                h["X-Device-Id"] = device
            conn.request(method, path, body=None if body is None else json.dumps(body), headers=h)
            r = conn.getresponse()
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
        finally:
            conn.close()

    def live_messages(self, key):
        """id -> envelope of every live message, read without anchor or exclusion."""
        messages, anchor = {}, None
        while True:
            query = {"limit": 1000, **({"anchor": anchor} if anchor else {})}
            status, page = self.request("GET", "/inbox?" + urllib.parse.urlencode(query), key)
            assert status == 200, (status, page)
            messages.update({m["id"]: m for m in page["messages"]})
            for d in page["deleted"]:
                messages.pop(d["id"], None)
            anchor = page["anchor"]
            if not page["hasMore"]:
                return messages
