#!/usr/bin/env python3
"""`make bench-wait-share`: how many of the box's places for waiting requests
one device holds, the measure MOCKCLOUD_WAITS_PER_ADDRESS's default rests on.

    python3 Benchmarks/wait_share.py [--transport curl|urlsession]

The device is the library as an app runs it: client-bench `follow` and
`watch-settings` (its feed and its settings followed, each wait 30 s,
ClientConfiguration's default), over libcurl. It reaches the box through a
loopback relay whose connections to the box come from an address of its
own (127.0.0.30), so that the places it holds can be told apart (the stack
lets one address hold all 48, so that what it needs shows): a sampler
counts them every 20 ms as the programs do (the lock files under the data
directory's .locks that name 127.0.0.30, under the programs' turn lock).
Another address writes to its feed every 0.5 s and to its settings every
1 s, so that its waits answer and are sent again all the time.

1. Following: 20 s of writes. Then the writes stop: a change ends every
   wait on its key, the ones nobody will read too, so a quiet spell is when
   those last longest.
2. The app restarts its follows 5 times, 2 s apart (each follow cancelled,
   new processes started at once: a cancel closes the connection).
3. A silent break, twice, 15 s apart: the relay resets the device's side of
   every connection and leaves the box's side open and silent, as when a
   phone leaves the Wi-Fi and comes back (the box hears nothing); the
   library reconnects at once. Then until the count is back at 2: how long
   the waits nobody will read hold their places (their 30 s).

Writes Benchmarks/results/wait-share.md.
"""
import argparse
import fcntl
import http.client
import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(REPO, "Tests", "support"))
import report  # noqa: E402
import stack  # noqa: E402
import suite  # noqa: E402

RESULTS = os.path.join(HERE, "results", "wait-share.md")
LIBRARY = os.path.join(REPO, ".build", "release", "client-bench")
DEVICE = "127.0.0.30"
KEY = "share-phone"


def log(*words):
    print("wait_share:", *words, file=sys.stderr, flush=True)


class Relay:
    """127.0.0.1:port -> the box, the box's side from DEVICE. `cut_silently`
    resets every device-side connection and keeps its box-side one open,
    read and dropped, never closed: the box hears nothing."""

    def __init__(self, box_port):
        self.box_port = box_port
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.pairs, self.lock, self.closing = [], threading.Lock(), False
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while not self.closing:
            try:
                device, _ = self.listener.accept()
            except OSError:
                return
            box = socket.create_connection(("127.0.0.1", self.box_port), source_address=(DEVICE, 0))
            pair = {"device": device, "box": box, "silent": False}
            with self.lock:
                self.pairs.append(pair)
            threading.Thread(target=self.pump, args=(pair,), daemon=True).start()

    def pump(self, pair):
        device, box = pair["device"], pair["box"]
        ends = {device: box, box: device}
        while not self.closing:
            if pair["silent"]:
                ends.pop(device, None)
            try:
                ready, _, _ = select.select(list(ends), [], [], 0.5)
            except (OSError, ValueError):   # cut meanwhile
                continue
            for s in ready:
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if pair["silent"]:
                    if s is device:
                        continue
                    if not data:    # the box closed it (its wait ran out and it answered)
                        box.close()
                        return
                    continue        # the answer nobody will read
                if not data:
                    for end in (device, box):
                        end.close()
                    return
                try:
                    ends[s].sendall(data)
                except OSError:
                    for end in (device, box):
                        end.close()
                    return

    def cut_silently(self):
        with self.lock:
            pairs = [p for p in self.pairs if not p["silent"] and p["device"].fileno() >= 0]
        for pair in pairs:
            pair["silent"] = True
            try:
                pair["device"].setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                pair["device"].close()
            except OSError:     # it ended meanwhile
                pass

    def close(self):
        self.closing = True
        self.listener.close()


def held_places(data, address=DEVICE):
    """Places `address` holds, counted as the programs count them."""
    folder = os.path.join(data, ".locks")
    # Never made here: the programs make it, as the user they run as.
    if not os.path.exists(os.path.join(folder, "waiting.lock")):
        return 0
    with open(os.path.join(folder, "waiting.lock"), "rb") as turn:
        fcntl.flock(turn, fcntl.LOCK_EX)
        count = 0
        for name in os.listdir(folder):
            if re.fullmatch(r"waiting\.[0-9]+\.lock", name):
                with open(os.path.join(folder, name), "rb") as place:
                    try:
                        fcntl.flock(place, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        count += place.read() == address.encode()
        return count


class Sampler(threading.Thread):
    def __init__(self, data):
        super().__init__(daemon=True)
        self.data, self.samples, self.stop = data, [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.samples.append((time.monotonic(), held_places(self.data)))
            time.sleep(0.02)

    def peak(self, start, end):
        return max((n for t, n in self.samples if start <= t <= end), default=0)


class Writer(threading.Thread):
    def __init__(self, base):
        super().__init__(daemon=True)
        self.base, self.stop, self.writes, self.errors = base, threading.Event(), 0, []

    def run(self):
        conn = None
        n = 0
        while not self.stop.is_set():
            n += 1
            try:
                conn = conn or suite.connect(self.base, timeout=60, source="127.0.0.31")
                conn.request("PUT", "/inbox/scan-%d" % n, body=json.dumps({"kg": 70 + n % 10}),
                             headers={"X-User-Key": KEY, "X-Device-Id": "mirror-1"})
                conn.getresponse().read()
                if n % 2 == 0:
                    conn.request("PUT", "/user/settings", body=json.dumps({"n": n}), headers={"X-User-Key": KEY})
                    conn.getresponse().read()
                self.writes += 1
            except (OSError, http.client.HTTPException) as error:
                self.errors.append(repr(error))
                conn = None
            time.sleep(0.5)


class App:
    """The device's two follows, as client-bench processes."""

    def __init__(self, transport, url, ca):
        self.procs = []
        for command in ("follow", "watch-settings"):
            self.procs.append(subprocess.Popen([LIBRARY, "--transport", transport, command, url, ca, KEY],
                                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL, text=True))

    def stop(self):
        for proc in self.procs:
            try:
                proc.stdin.write("cancel\n")
                proc.stdin.flush()
            except OSError:
                pass
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transport", default="curl", choices=("curl", "urlsession"))
    args = ap.parse_args()
    if not os.access(LIBRARY, os.X_OK):
        sys.exit("wait_share: %s is missing: make build" % LIBRARY)
    work = tempfile.mkdtemp(prefix="mcws.", dir="/tmp")
    load_before = report.load_average()
    out = {}
    try:
        # No share on this stack: what the device needs shows, not the cap.
        with stack.Stack(work, "share", MOCKCLOUD_WAITS_PER_ADDRESS="48") as box:
            relay = Relay(box.port)
            url, ca = "https://127.0.0.1:%d" % relay.port, os.path.join(box.run, "tls", "ca.crt")
            sampler = Sampler(box.data)
            sampler.start()
            writer = Writer(box.base)
            writer.start()
            app = App(args.transport, url, ca)
            log("following, 20 s")
            start = time.monotonic()
            time.sleep(20)
            out["steady"] = sampler.peak(start + 2, time.monotonic())
            # A change ends every wait on its key, the ones nobody reads too:
            # what follows comes in a quiet spell, when those last longest.
            writer.stop.set()
            writer.join()
            time.sleep(2)
            log("5 restarts in a quiet spell")
            start = time.monotonic()
            for _ in range(5):
                app.stop()
                app = App(args.transport, url, ca)
                time.sleep(2)
            out["restarts"] = sampler.peak(start, time.monotonic())
            log("2 silent breaks, 15 s apart, then until the count is back at 2")
            time.sleep(2)
            start = time.monotonic()
            relay.cut_silently()
            time.sleep(15)
            relay.cut_silently()
            second = time.monotonic()
            while time.monotonic() - second < 90:
                time.sleep(0.5)
                if held_places(box.data) <= 2 and time.monotonic() - second > 5:
                    break
            end = time.monotonic()
            out["breaks"] = sampler.peak(start, end)
            out["first"] = sampler.peak(start, start + 15)
            above = [t for t, n in sampler.samples if t >= start and n > 2]
            out["held_after"] = (max(above) - start) if above else 0.0
            app.stop()
            sampler.stop.set()
            relay.close()
            out["writes"] = writer.writes
            if writer.errors:
                log("the writer's errors (each retried on a new connection):", writer.errors[:5])
    finally:
        load_after = report.load_average()
        shutil.rmtree(work, ignore_errors=True)
    report.publish(RESULTS, "\n".join([
        "# The places one device holds (`make bench-wait-share`)",
        "",
        report.measured(load_before, load_after),
        "The library (client-bench `follow` + `watch-settings`, %s, 30 s waits) through a relay from %s; "
        "%d writes to its feed, every other one to its settings too, 0.5 s apart." % (args.transport, DEVICE,
                                                                                      out["writes"]),
        "",
        "| what the device does | most places it held at once |",
        "| --- | --- |",
        "| follows its feed and its settings (20 s) | %d |" % out["steady"],
        "| then, nothing written, restarts both 5 times, 2 s apart (each cancel closes its connection) | %d |"
        % out["restarts"],
        "| a silent break (its connections gone, the box not told) and it reconnects | %d |" % out["first"],
        "| a second silent break 15 s later | %d |" % out["breaks"],
        "",
        "The waits nobody reads held their places until their 30 s ran out: the device held more than 2 "
        "until %.1f s after the first break." % out["held_after"],
        "",
    ]))


if __name__ == "__main__":
    main()
