#!/usr/bin/env python3
"""Installing programs into the cgi-bin a stack serves from, as `make
install` and `make serve` do from a checkout whose stack is running: every
request gets its normal answer, none a 403 or 502 for a program that is
missing or half written.

A stack (nginx + fcgiwrap + TLS) serves from a cgi-bin of this test's own.
The real install step, packaging/install-programs.sh, runs in a loop into
it, from two sets of the built programs that differ in their bytes (the
second padded at the end, which the loader ignores), so that every program
is really replaced on every round. Meanwhile 4 writers and 2 readers, each
a device of its own on one keep-alive connection, send settings and inbox
writes and reads through nginx, and each answer must be the one the
request gets on a quiet stack (200 or 201).

    Tests/reinstall/run.py [--rounds N]        (Tests/run-all.sh runs it; make test)

MOCKCLOUD_CGI_BIN names the programs to install (default cgi-bin/). Prints
`N passed, M failed` last.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(REPO, "Tests", "support"))
from stack import DEFAULT_CGI_BIN, Stack  # noqa: E402
from suite import Checks, connect, device_address  # noqa: E402

INSTALL = os.path.join(REPO, "packaging", "install-programs.sh")
PROGRAMS = ("user-settings", "inbox", "mockcloud-admin")


def program_sets(work):
    """Two folders of the built programs: as built, and padded at the end."""
    plain, padded = os.path.join(work, "plain"), os.path.join(work, "padded")
    for folder in (plain, padded):
        os.makedirs(folder)
    for program in PROGRAMS:
        shutil.copy(os.path.join(DEFAULT_CGI_BIN, program), os.path.join(plain, program))
        shutil.copy(os.path.join(DEFAULT_CGI_BIN, program), os.path.join(padded, program))
        with open(os.path.join(padded, program), "ab") as f:
            f.write(b"\0" * 4096)
    return plain, padded


class Device(threading.Thread):
    """One client on a keep-alive connection from an address of its own:
    a writer (settings PUT, inbox PUT) or a reader (settings GET, feed),
    sending until told to stop; every answer other than the expected one
    is kept."""

    def __init__(self, base, name, writes):
        super().__init__(daemon=True)
        self.base, self.name, self.writes = base, name, writes
        self.stop = threading.Event()
        self.sent, self.wrong = 0, []

    def requests(self, n):
        key = "reinstall-" + self.name
        if self.writes:
            document = {"updatedAt": "2026-05-18T10:00:%02d.%06dZ" % (n // 1000000 % 60, n % 1000000), "n": n}
            yield "PUT", "/user/settings", key, json.dumps(document), (200,)
            yield "PUT", "/inbox/m-%d" % n, key, json.dumps({"n": n}), (201,)
        else:
            yield "GET", "/user/settings", "reinstall-w0", None, (200, 404)
            yield "GET", "/inbox?limit=10", "reinstall-w1", None, (200,)

    def run(self):
        conn = connect(self.base, source=device_address())
        n = 0
        while not self.stop.is_set():
            for method, path, key, body, expected in self.requests(n):
                try:
                    conn.request(method, path, body=body, headers={"X-User-Key": key})
                    answer = conn.getresponse()
                    text = answer.read()
                    status = answer.status
                except OSError as error:
                    conn.close()
                    conn = connect(self.base, source=device_address())
                    status, text = type(error).__name__, b""
                self.sent += 1
                if status not in expected:
                    self.wrong.append("%s %s: %s %s" % (method, path, status, text[:160].decode(errors="replace")))
            n += 1
        conn.close()


def install_rounds(sets, cgi_bin, rounds):
    """The install step `rounds` times, the two sets in turn; its failures."""
    failures = []
    for n in range(rounds):
        done = subprocess.run([INSTALL, sets[n % 2], cgi_bin, *PROGRAMS], capture_output=True, text=True)
        if done.returncode != 0:
            failures.append("round %d: exit %d: %s" % (n, done.returncode, done.stderr[-300:]))
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    checks = Checks()
    missing = [p for p in PROGRAMS if not os.access(os.path.join(DEFAULT_CGI_BIN, p), os.X_OK)]
    if missing:
        checks.check("the programs are built", ["no %s in %s: run make install" % (p, DEFAULT_CGI_BIN) for p in missing])
        return checks.summary()
    work = tempfile.mkdtemp(prefix="mcri.")
    # The copies go to memory when there is a tmpfs: the test is about the
    # moment of replacement, not about how fast the disk writes 36 MB.
    programs = tempfile.mkdtemp(prefix="mcri.", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else work)
    os.chmod(programs, 0o711)
    stack = None
    try:
        sets = program_sets(programs)
        cgi_bin = os.path.join(programs, "cgi-bin")
        install_rounds(sets, cgi_bin, 1)
        stack = Stack(work, "serving", cgi_bin=cgi_bin).start()
        devices = [Device(stack.base, "w%d" % i, writes=True) for i in range(4)]
        devices += [Device(stack.base, "r%d" % i, writes=False) for i in range(2)]
        for device in devices:
            device.start()
        failures = install_rounds(sets, cgi_bin, args.rounds)
        for device in devices:
            device.stop.set()
        for device in devices:
            device.join(60)
        sent = sum(d.sent for d in devices)
        checks.check("%d installs into the cgi-bin the stack serves from, each replacing every program" % args.rounds,
                     failures)
        wrong = [line for d in devices for line in d.wrong]
        checks.check("%d requests of 4 writers and 2 readers meanwhile: each its normal answer, no 403 or 502 "
                     "(%d not)" % (sent, len(wrong)), wrong if sent >= 100 else wrong + ["only %d requests sent" % sent])
        left = sorted(set(os.listdir(cgi_bin)) - set(PROGRAMS))
        last = sets[(args.rounds - 1) % 2]
        replaced = [p for p in PROGRAMS
                    if os.path.getsize(os.path.join(cgi_bin, p)) != os.path.getsize(os.path.join(last, p))]
        checks.check("the cgi-bin holds the last round's programs and no temporary file",
                     ["left behind: %s" % left] * bool(left) + ["not the last round's: %s" % replaced] * bool(replaced))
    except RuntimeError as error:
        checks.check("the stack serving from the test's cgi-bin starts", [str(error)])
    finally:
        if stack:
            stack.stop()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(programs, ignore_errors=True)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
