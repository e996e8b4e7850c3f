"""A MockCloud stack for Python callers (the stress scripts, the
benchmarks), started and stopped by the shell harness Tests/support/stack.sh,
the one the shell suites source: same free port, same directories, same
launcher.

Python 3 standard library only.
"""
import os
import socket
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
STACK_SH = os.path.join(HERE, "stack.sh")
DEFAULT_CGI_BIN = os.environ.get("MOCKCLOUD_CGI_BIN") or os.path.join(REPO, "cgi-bin")


def free_port():
    """A free 127.0.0.1 port, for a server of the caller's own (stack.sh picks its own)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Stack:
    """nginx + fcgiwrap + the programs in `cgi_bin` on a free 127.0.0.1
    port, run directory work/NAME, data work/NAME-data; `settings` are more
    MOCKCLOUD_* variables for the launcher (MOCKCLOUD_DATA, _PORT and _HOST
    among them win). Nothing else of the caller's MOCKCLOUD_* environment
    reaches it. `prefix`: a command the harness runs under (`ip netns exec
    NS` serves in a network namespace)."""

    def __init__(self, work, name, cgi_bin=None, prefix=(), **settings):
        self.work, self.name, self.prefix = work, name, list(prefix)
        self.cgi_bin = cgi_bin or DEFAULT_CGI_BIN
        self.settings = dict(settings, MOCKCLOUD_CGI_BIN=self.cgi_bin)
        self.port = self.base = self.run = self.data = None

    def _env(self):
        # MOCKCLOUD_TEST_MODE alone goes through: the mode of every stack (stack.sh).
        return {k: v for k, v in os.environ.items() if not k.startswith("MOCKCLOUD_") or k == "MOCKCLOUD_TEST_MODE"}

    def start(self):
        """Starts it, or raises RuntimeError with the launcher's words."""
        args = ["%s=%s" % item for item in sorted(self.settings.items())]
        out = subprocess.run(self.prefix + [STACK_SH, "start", self.work, self.name] + args, env=self._env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        # Recorded before the check: a stack that half started is stopped too.
        self.run = os.path.join(self.work, self.name)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.decode(errors="replace").rstrip())
        port, self.run, self.data = out.stdout.decode().splitlines()[-3:]
        self.port = int(port)
        self.base = "https://%s:%d" % (self.settings.get("MOCKCLOUD_HOST", "127.0.0.1"), self.port)
        return self

    def restart(self, data=None):
        """Stops it and starts it again on the same port and run directory,
        with another data directory when given."""
        port, data = str(self.port), data or self.data
        self.stop()
        self.settings.update(MOCKCLOUD_PORT=port, MOCKCLOUD_DATA=data)
        return self.start()

    def stop(self):
        if self.run:
            subprocess.run(self.prefix + [STACK_SH, "stop", self.run], env=self._env(), stdout=subprocess.DEVNULL,
                           timeout=120)
            self.run = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
