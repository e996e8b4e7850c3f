"""What a Python suite prints: `ok` / `FAIL` lines, then `N passed, M
failed` last, as Tests/run-all.sh counts them (the shell suites' twin is
`it`/`fail` in Tests/support/cases.sh). STRESS_SHOW: problem lines shown
per failed check (default 15). Also how and where from a suite's clients
(and the benchmarks') connect to a stack.
"""
import http.client
import itertools
import os
import ssl
import time
import urllib.parse

# The stacks' certificates come from CAs of their own: not checked.
TLS = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
TLS.check_hostname = False
TLS.verify_mode = ssl.CERT_NONE


def connect(base, timeout=30, source=None):
    """An HTTPS connection (http.client, keep-alive) to a stack's
    https://host:port, from the loopback address `source` when given."""
    url = urllib.parse.urlsplit(base)
    return http.client.HTTPSConnection(url.hostname, url.port, context=TLS, timeout=timeout,
                                       source_address=(source, 0) if source else None)

_devices = itertools.count()


def until(condition, timeout=60, step=0.05):
    """True once `condition()` holds, checked every `step` seconds; False
    after `timeout` seconds (a bound for what never happens, not a speed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return False


def device_address():
    """A loopback source address of its own for each client that plays a
    device of its own (a writer among 16 is a phone among 16 on the LAN):
    127.0.0.10, .11, ... The server caps requests in progress per address
    (nginx/mockcloud-http.conf), as it would for 16 phones; 127.0.0.1 and
    127.0.0.2 stay for the flood tests' flooder and victim."""
    return "127.0.0.%d" % (10 + next(_devices) % 240)


class Checks:
    """`ok` / `FAIL` lines, then `N passed, M failed` (STYLE point 11)."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, problems, limit=int(os.environ.get("STRESS_SHOW", "15"))):
        """`problems`: a list of strings (empty: the check passed) or a bool."""
        if problems is True or problems == []:
            self.passed += 1
            print("ok    %s" % name, flush=True)
            return True
        self.failed += 1
        print("FAIL  %s" % name, flush=True)
        if isinstance(problems, list):
            for line in problems[:limit]:
                print("        %s" % line, flush=True)
            if len(problems) > limit:
                print("        ... and %d more" % (len(problems) - limit), flush=True)
        return False

    def summary(self):
        print("%d passed, %d failed" % (self.passed, self.failed), flush=True)
        return 1 if self.failed else 0
