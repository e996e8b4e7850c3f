#!/usr/bin/env python3
"""mockcloud-sync and MockCloudClient against the real stack (nginx +
fcgiwrap + the installed programs) through TLS, verified with the stack's
local CA (no -k anywhere, this suite's own reads included):

- a push of 5,000 samples with the server restarted mid-push, then a
  re-run that sends nothing and a version bump of 100;
- a push of 5,000 and a pull through a loopback relay that resets the
  first connections at random byte counts;
- the limits at their defaults (bodies that need several 8 MiB requests,
  one over 256 KiB refused, the per-address limits on);
- a 410 forced by compaction (tombstone horizon 0) and one by a restore
  from backup (mockcloud-admin backup / restore);
- a 409 and a 412 on settings; a per-field merge (`settings merge`) of two
  phones' offline edits;
- trust: the system's CAs, a wrong pin, and a CA file with another box's
  CA appended are refused, that other box never reached.

After each, the pushed folder and the pulled folder must equal the server's
state: every id once, no extra, every body and version right.

    Tests/client/run.py            (Tests/run-all.sh runs it; make test)

MOCKCLOUD_SYNC_BIN names the tool (default .build/release/mockcloud-sync).
Prints `N passed, M failed` last.
"""
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(REPO, "Tests", "support"))
sys.path.insert(0, os.path.join(REPO, "Benchmarks"))
sys.path.insert(0, HERE)
from cutting_relay import CuttingRelay  # noqa: E402
from inbox_http import InboxHTTP  # noqa: E402
from samples import sample  # noqa: E402
from stack import Stack  # noqa: E402
from suite import Checks  # noqa: E402
import waiting  # noqa: E402  (beside this file)

TOOL = os.environ.get("MOCKCLOUD_SYNC_BIN") or os.path.join(REPO, ".build", "release", "mockcloud-sync")
ADMIN = os.path.join(REPO, "cgi-bin", "mockcloud-admin")


class Box:
    """A stack, with reads of its truth through TLS verified by its CA."""

    def __init__(self, work, name, **settings):
        self.stack = Stack(work, name, **settings).start()
        self.ca = os.path.join(self.stack.run, "tls", "ca.crt")
        self.http = InboxHTTP("127.0.0.1", self.stack.port, ssl.create_default_context(cafile=self.ca))

    @property
    def url(self):
        return self.stack.base

    def truth(self, key):
        """id -> (version, body) of every live message."""
        return {ident: (m["version"], m["body"]) for ident, m in self.http.live_messages(key).items()}

    def request(self, *args, **kw):
        return self.http.request(*args, **kw)

    def restart(self, data=None):
        """nginx and fcgiwrap stopped and started again on the same port
        (with another data directory when given), by the harness."""
        self.stack.restart(data)

    def stop(self):
        self.stack.stop()


def sync(box, *args, url=None, key, device="mirror-1", wait=True):
    cmd = [TOOL, *args, "--url", url or box.url, "--ca", box.ca, "--user-key", key, "--json"]
    if device:
        cmd += ["--device-id", device]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if not wait:
        return proc
    return finish(proc)


def finish(proc):
    out, err = proc.communicate(timeout=300)
    try:
        result = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    except ValueError:
        result = {"raw": out}
    return proc.returncode, result, err


def write_samples(folder, first, count, run=0, version=1):
    os.makedirs(folder, exist_ok=True)
    for i in range(first, first + count):
        body = sample(i, run)
        body["syncVersion"] = version
        with open(os.path.join(folder, f"s-{i:05d}.json"), "w") as f:
            json.dump(body, f)


def folder_state(folder):
    """id -> (version, body) of the *.json files a push would send."""
    state = {}
    for name in os.listdir(folder):
        if name.endswith(".json") and not name.startswith("."):
            with open(os.path.join(folder, name)) as f:
                body = json.load(f)
            state[name[:-5]] = (body.get("syncVersion", 0), body)
    return state


def pulled_state(folder):
    """id -> (version, body) of a pulled folder, the versions from its record."""
    versions = {}
    record = os.path.join(folder, ".mockcloud-sync-pulled")
    if os.path.exists(record):
        for line in open(record):
            ident, version, _seq = line.split()
            versions[ident] = int(version)
    state = {}
    for name in os.listdir(folder):
        if name.endswith(".json") and not name.startswith("."):
            with open(os.path.join(folder, name)) as f:
                state[name[:-5]] = (versions.get(name[:-5]), json.load(f))
    return state


def differences(label, mine, truth):
    problems = []
    for ident in sorted(set(truth) - set(mine))[:5]:
        problems.append(f"{label}: missing {ident}")
    for ident in sorted(set(mine) - set(truth))[:5]:
        problems.append(f"{label}: {ident} is not on the server")
    for ident in sorted(set(mine) & set(truth)):
        if mine[ident] != truth[ident]:
            problems.append(f"{label}: {ident} is {str(mine[ident])[:80]}, the server has {str(truth[ident])[:80]}")
            if len(problems) > 8:
                break
    if len(mine) != len(truth):
        problems.append(f"{label}: {len(mine)} messages, the server holds {len(truth)}")
    return problems


def wait_for_lines(path, lines, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(path) as f:
                if sum(1 for _ in f) >= lines:
                    return True
        except FileNotFoundError:
            pass
        time.sleep(0.005)
    return False


def main():
    checks = Checks()
    if not os.access(TOOL, os.X_OK):
        checks.check(f"the tool is built ({TOOL})", [f"no {TOOL}: run make build"])
        return checks.summary()
    work = tempfile.mkdtemp(prefix="mcsync.")
    boxes = []
    try:
        box = Box(work, "main")
        boxes.append(box)

        # 1. 5,000 samples, the server restarted once the first request was acknowledged.
        push = os.path.join(work, "push-restart")
        write_samples(push, 0, 5000)
        proc = sync(box, "push", push, key="restart", wait=False)
        restarted = wait_for_lines(os.path.join(push, ".mockcloud-sync-pushed"), 1000)
        if restarted:
            box.restart()
        status, result, err = finish(proc)
        checks.check("push of 5,000 with the server restarted mid-push: exit 0, all stored", [] if (
            restarted and status == 0 and result.get("stored") == 5000 and result.get("refused") == 0
        ) else [f"restarted={restarted} exit {status}: {result} {err[-500:]}"])
        truth = box.truth("restart")
        checks.check("after the restart the server holds exactly the folder", differences("push", folder_state(push), truth))
        status, result, err = sync(box, "push", push, key="restart")
        checks.check("a re-run sends nothing new", [] if status == 0 and result.get("sent") == 0 and
                     result.get("unchanged") == 5000 else [f"exit {status}: {result} {err[-300:]}"])
        write_samples(push, 0, 100, version=2)
        status, result, err = sync(box, "push", push, key="restart")
        truth = box.truth("restart")
        checks.check("100 files at syncVersion 2 send 100 and the server keeps version 2",
                     ([] if status == 0 and result.get("sent") == 100 else [f"exit {status}: {result}"])
                     + differences("push v2", folder_state(push), truth))
        pull = os.path.join(work, "pull-restart")
        status, result, err = sync(box, "pull", pull, key="restart", device="phone-1")
        checks.check("pull of the 5,000 converges to the server", ([] if status == 0 else [f"exit {status}: {err}"])
                     + differences("pull", pulled_state(pull), box.truth("restart")))

        # 2. Through a relay that resets the first connections at random points.
        relay = CuttingRelay(box.stack.port, cuts=6, low=200, high=400_000, seed=22)
        relay_url = f"https://127.0.0.1:{relay.port}"
        push = os.path.join(work, "push-relay")
        write_samples(push, 0, 5000, run=1)
        status, result, err = sync(box, "push", push, url=relay_url, key="relay")
        cuts = len(relay.cut_points)
        checks.check("push of 5,000 through a relay that cuts connections: exit 0",
                     [] if status == 0 and cuts >= 1 else [f"exit {status}, {cuts} cuts: {result} {err[-500:]}"])
        checks.check("after the cuts the server holds exactly the folder",
                     differences("push via relay", folder_state(push), box.truth("relay")))
        relay.close()
        relay = CuttingRelay(box.stack.port, cuts=4, low=200, high=60_000, seed=23)
        pull = os.path.join(work, "pull-relay")
        status, result, err = sync(box, "pull", pull, url=f"https://127.0.0.1:{relay.port}", key="relay", device=None)
        checks.check(f"pull through the cutting relay converges ({len(relay.cut_points)} cuts)",
                     ([] if status == 0 and relay.cut_points else [f"exit {status}: {err[-300:]}"])
                     + differences("pull via relay", pulled_state(pull), box.truth("relay")))
        relay.close()

        # 3. The limits at their defaults.
        push = os.path.join(work, "push-limits")
        os.makedirs(push)
        for i in range(60):  # 60 bodies of ~200 KiB: 12 MB, at least two 8 MiB requests
            with open(os.path.join(push, f"big-{i:02d}.json"), "w") as f:
                json.dump({"syncVersion": 1, "blob": "x" * (200 << 10), "i": i}, f)
        with open(os.path.join(push, "huge.json"), "w") as f:
            json.dump({"blob": "y" * (300 << 10)}, f)
        status, result, err = sync(box, "push", push, key="limits")
        truth = box.truth("limits")
        expected = {k: v for k, v in folder_state(push).items() if k != "huge"}
        checks.check("60 bodies of 200 KiB are stored over several requests; one of 300 KiB is refused (exit 1)",
                     ([] if status == 1 and result.get("stored") == 60 and result.get("refused") == 1 and
                      "huge.json" in " ".join(result.get("problems", [])) else [f"exit {status}: {result}"])
                     + differences("limits", expected, truth))

        # 4. 410 by compaction: a deletion's tombstone dropped at once.
        compacting = Box(work, "compact", MOCKCLOUD_INBOX_TOMBSTONE_HORIZON=0, MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS=1)
        boxes.append(compacting)
        push = os.path.join(work, "push-compact")
        write_samples(push, 0, 300, run=2)
        sync(compacting, "push", push, key="compact")
        pull = os.path.join(work, "pull-compact")
        status, _, err = sync(compacting, "pull", pull, key="compact", device="phone-1")
        for i in range(0, 40):
            compacting.request("DELETE", f"/inbox/s-{i:05d}", "compact", device="app-1")
        # The log (300 records) must double before it is compacted: 700 more changes.
        churn = [{"id": f"churn-{n}", "body": {"n": n}} for n in range(350)]
        churn += [{"id": f"churn-{n}", "deleted": True} for n in range(350)]
        compacting.request("POST", "/inbox:bulk", "compact", device="app-1", body={"messages": churn})
        status, result, err = sync(compacting, "pull", pull, key="compact", device="phone-1")
        truth = compacting.truth("compact")
        checks.check("410 after compaction: the pull resyncs and drops the 40 deleted files",
                     ([] if status == 0 and result.get("resync") is True and len(truth) == 260
                      else [f"exit {status}: {result} {err[-300:]}; server {len(truth)}"])
                     + differences("pull after compaction", pulled_state(pull), truth))

        # 5. 410 by a restore from backup, on the same port.
        restoring = Box(work, "restore")
        boxes.append(restoring)
        push = os.path.join(work, "push-restore")
        pull = os.path.join(work, "pull-restore")
        write_samples(push, 0, 300, run=3)
        sync(restoring, "push", push, key="restore")
        tar = os.path.join(work, "backup.tar")
        backup = subprocess.run([ADMIN, "backup", restoring.stack.data, tar], capture_output=True, text=True)
        write_samples(push, 300, 200, run=3)
        write_samples(push, 0, 50, run=3, version=2)
        sync(restoring, "push", push, key="restore")
        sync(restoring, "pull", pull, key="restore", device="phone-1")
        restored = os.path.join(work, "restored-data")
        restore = subprocess.run([ADMIN, "restore", tar, restored], capture_output=True, text=True)
        restoring.restart(data=restored)
        before = len(restoring.truth("restore"))
        status, result, err = sync(restoring, "pull", pull, key="restore", device="phone-1")
        truth = restoring.truth("restore")
        checks.check("410 after a restore: the pull resyncs to the restored 300",
                     ([] if backup.returncode == 0 and restore.returncode == 0 and before == 300 and status == 0
                      and result.get("resync") is True else
                      [f"backup {backup.returncode} {backup.stderr[-200:]} restore {restore.returncode} "
                       f"{restore.stderr[-200:]} server {before}; pull exit {status}: {result} {err[-300:]}"])
                     + differences("pull after restore", pulled_state(pull), truth))
        status, result, err = sync(restoring, "push", push, key="restore")
        truth = restoring.truth("restore")
        checks.check("after a restore the push notices (410) and sends everything again",
                     ([] if status == 0 and result.get("resent") is True and result.get("sent") == 500
                      else [f"exit {status}: {result} {err[-300:]}"])
                     + differences("push after restore", folder_state(push), truth))
        status, result, err = sync(restoring, "pull", pull, key="restore", device="phone-1")
        checks.check("then an incremental pull converges to the 500",
                     ([] if status == 0 and result.get("resync") is False else [f"exit {status}: {result}"])
                     + differences("pull after re-push", pulled_state(pull), restoring.truth("restore")))

        # 6. Settings: 409 (older updatedAt) and 412 (stale If-Match) hand back the current document.
        files = os.path.join(work, "settings")
        os.makedirs(files)
        for name, stamp, units in (("new", "2026-05-18T04:43:04.095Z", "metric"), ("old", "2026-05-17T00:00:00Z", "imperial")):
            with open(os.path.join(files, name + ".json"), "w") as f:
                f.write('{"updatedAt": "%s", "units": "%s", "factor": 0.9990998620664758}' % (stamp, units))
        s1, put, _ = sync(box, "settings", "put", os.path.join(files, "new.json"), key="settings")
        s2, conflict, _ = sync(box, "settings", "put", os.path.join(files, "old.json"), key="settings")
        s3, stale, _ = sync(box, "settings", "put", os.path.join(files, "new.json"), "--if-match", '"0000000000000000"', key="settings")
        s4, got, _ = sync(box, "settings", "get", key="settings")
        checks.check("settings: 409 for an older updatedAt and 412 for a stale If-Match, each with current (exit 1)",
                     [] if s1 == 0 and s2 == 1 and conflict.get("status") == 409 and
                     conflict.get("current", {}).get("units") == "metric" and s3 == 1 and stale.get("status") == 412
                     and stale.get("current") == put.get("document") and s4 == 0 and got.get("document") == put.get("document")
                     and got["document"]["factor"] == 0.9990998620664758
                     else [f"put {s1} {put}", f"older {s2} {conflict}", f"stale {s3} {stale}", f"get {s4} {got}"])
        s5, _, err = sync(box, "settings", "get", key="settings-none")
        checks.check("settings get with nothing stored exits 6", [] if s5 == 6 else [f"exit {s5}: {err}"])

        # 7. Settings per field: two phones edit different members offline;
        #    both edits survive, in the order the README tells.
        for name, text in (("base", '{"weightCalibrationFactor": 1.0, "unitSystem": "metric", "heightCm": 175, '
                                    '"updatedAt": "2026-05-18T10:00:00Z"}'),
                           ("a", '{"weightCalibrationFactor": 0.999}'), ("b", '{"unitSystem": "imperial"}'),
                           ("late", '{"unitSystem": "metric", "heightCm": 180}')):
            with open(os.path.join(files, name + ".json"), "w") as f:
                f.write(text)
        m0, _, e0 = sync(box, "settings", "put", os.path.join(files, "base.json"), key="fields")
        m1, b, e1 = sync(box, "settings", "merge", os.path.join(files, "b.json"), "--edited-at", "2026-05-18T10:05:00Z",
                         key="fields", device="phone-b")
        m2, a, e2 = sync(box, "settings", "merge", os.path.join(files, "a.json"), "--edited-at", "2026-05-18T10:01:00Z",
                         key="fields", device="phone-a")
        want = {"weightCalibrationFactor": 0.999, "unitSystem": "imperial", "heightCm": 175,
                "updatedAt": "20260518T100500.000000Z"}
        got_doc = {k: v for k, v in a.get("document", {}).items() if k != "serverReceivedAt"}
        checks.check("settings merge --edited-at: two phones' offline edits of different members both survive (exit 0)",
                     [] if (m0, m1, m2) == (0, 0, 0) and got_doc == want and a.get("kept") == [] and a.get("status") == "merged"
                     else [f"put {m0} {e0[-200:]}", f"b {m1} {b} {e1[-200:]}", f"a {m2} {a} {e2[-200:]}"])
        m3, late, e3 = sync(box, "settings", "merge", os.path.join(files, "late.json"), "--edited-at", "2026-05-18T10:03:00Z",
                            key="fields", device="phone-a")
        checks.check("a late merge of a member edited since names it as kept and exits 1; its other member lands",
                     [] if m3 == 1 and late.get("kept") == ["unitSystem"] and late["document"]["unitSystem"] == "imperial"
                     and late["document"]["heightCm"] == 180 else [f"exit {m3}: {late} {e3[-300:]}"])
        m4, _, e4 = sync(box, "settings", "merge", os.path.join(files, "a.json"), key="fields")
        m5, _, e5 = sync(box, "settings", "merge", os.path.join(files, "a.json"), "--edited-at", "soon", key="fields")
        checks.check("settings merge without --edited-at, or with one that is no time, is a usage error (exit 2)",
                     [] if m4 == 2 and "--edited-at" in e4 and m5 == 2 and "not a time stamp" in e5
                     else [f"without: {m4} {e4[-200:]}", f"bad: {m5} {e5[-200:]}"])

        # Trust: the system's CAs are not the box's CA.
        proc = subprocess.run([TOOL, "settings", "get", "--url", box.url, "--ca", "/etc/ssl/certs/ca-certificates.crt",
                               "--user-key", "u1"], capture_output=True, text=True)
        fingerprint = subprocess.run(["openssl", "x509", "-in", box.ca, "-noout", "-fingerprint", "-sha256"],
                                     capture_output=True, text=True).stdout.strip().split("=")[-1]
        good = subprocess.run([TOOL, "settings", "get", "--url", box.url, "--ca", box.ca, "--ca-sha256", fingerprint,
                               "--user-key", "settings"], capture_output=True, text=True)
        wrong = subprocess.run([TOOL, "settings", "get", "--url", box.url, "--ca", box.ca, "--ca-sha256", "00" * 32,
                                "--user-key", "settings"], capture_output=True, text=True)
        checks.check("another CA is refused (exit 4); the CA file is checked against its SHA-256",
                     [] if proc.returncode == 4 and good.returncode == 0 and wrong.returncode == 4
                     else [f"system CAs {proc.returncode} {proc.stderr}", f"right pin {good.returncode} {good.stderr}",
                           f"wrong pin {wrong.returncode} {wrong.stderr}"])

        # Trust: a CA file with another CA appended is refused, pinned to the
        # box's fingerprint or not, and never reaches a server the other CA signed.
        other = Box(work, "other-ca")
        boxes.append(other)
        appended = os.path.join(work, "appended-ca.crt")
        with open(appended, "w") as f:
            f.write(open(box.ca).read() + open(other.ca).read())
        problems = []
        for url, pin in [(other.url, ["--ca-sha256", fingerprint]), (other.url, []), (box.url, ["--ca-sha256", fingerprint])]:
            run = subprocess.run([TOOL, "settings", "get", "--url", url, "--ca", appended, *pin, "--user-key", "settings"],
                                 capture_output=True, text=True)
            if run.returncode != 4 or "exactly one" not in run.stderr or run.stdout:
                problems.append(f"{url} {pin}: exit {run.returncode}, stdout {run.stdout[:200]!r}, stderr {run.stderr[:200]!r}")
        alone = subprocess.run([TOOL, "settings", "get", "--url", other.url, "--ca", other.ca, "--user-key", "settings"],
                               capture_output=True, text=True)
        if alone.returncode != 6:  # its own CA: served, nothing stored there
            problems.append(f"the other box with its own CA: exit {alone.returncode} {alone.stderr[:200]}")
        checks.check("a CA file with another CA appended is refused (exit 4), with or without --ca-sha256", problems)

        # The device's package: the stripped tool runs; libcurl is the one library beyond libc's and C++'s.
        dist = os.path.join(work, "dist")
        built = subprocess.run([os.path.join(REPO, "packaging", "build-sync-deb.sh")], capture_output=True, text=True,
                               env=dict(os.environ, MOCKCLOUD_DIST=dist))
        problems = [] if built.returncode == 0 else [built.stderr[-300:]]
        if not problems:
            deb = os.path.join(dist, os.listdir(dist)[0])
            subprocess.run(["dpkg-deb", "-x", deb, os.path.join(work, "unpacked")], check=True)
            tool = os.path.join(work, "unpacked", "usr", "bin", "mockcloud-sync")
            usage = subprocess.run([tool, "--help"], capture_output=True, text=True)
            depends = subprocess.run(["dpkg-deb", "-f", deb, "Depends"], capture_output=True, text=True).stdout
            needed = subprocess.run(["readelf", "-d", tool], capture_output=True, text=True).stdout
            if usage.returncode != 0 or "mockcloud-sync push DIR" not in usage.stdout:
                problems.append(f"--help: {usage.returncode} {usage.stderr}")
            if "libcurl4" not in depends or "libswift" in needed or "libcurl.so.4" not in needed:
                problems.append(f"Depends {depends.strip()}; NEEDED {needed.count('NEEDED')} lines")
        checks.check("make deb's second package: mockcloud-sync, the Swift runtime inside, Depends libcurl4", problems)

        # Waits meet faults: the stack stopped and restarted under them, a
        # compaction and a 410 during them (Tests/client/waiting.py).
        waits = Box(work, "waits", MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS="8", MOCKCLOUD_INBOX_TOMBSTONE_HORIZON="0")
        boxes.append(waits)
        waiting.faults(waits, checks)
        waiting.follow_checks(waits, checks, TOOL)
    finally:
        for b in boxes:
            b.stop()
        shutil.rmtree(work, ignore_errors=True)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
