#!/usr/bin/env python3
"""`make bench-client`: MockCloudClient (through mockcloud-sync) over the same
simulated Wi-Fi link as `make bench-lan` (bench_lan.py's namespaces, link
and stack, reused), with plain curl doing the same work beside it.

    python3 Benchmarks/lan/bench_client.py [--tmpfs] [--out FILE]

1. push: 10,000 HealthKit-like samples (Benchmarks/samples.py) through
   the library (client-bench: `upload`, bulk requests of 1,000, two in
   flight; timed inside the process, connection set-up included) over each
   transport, CurlTransport (libcurl) and URLSessionTransport
   (FoundationNetworking; in a mount namespace whose /etc/ssl/certs is the
   box's CA alone, as Tests/client/run.py runs it), and as
   files through `mockcloud-sync push` (process, files, state record and
   the feed catch-up included), against the round-trip-bound minimum of the
   bulk path: (2 set-up round trips + one per request) x 10 ms + the bytes
   on the wire at 50 Mbit/s.
   curl: the same 10 bulk bodies, prepared beforehand, one curl process,
   one connection (--next), HTTP/2.
2. pull: the 10,000-message feed in pages of 1,000 with gzip, through the
   library (client-bench: `changes(since: nil)`, each transport) and `mockcloud-sync pull`
   into an empty folder (10,000 files written and synced); curl: the same pages with
   --compressed, each call given the previous page's anchor (a process and
   a TLS handshake per page, as a shell script would do it).
Each runs 3 times (new keys and folders for push); the median is reported.
With --tmpfs the stack's data and the folders live on /dev/shm: the
client and the link without this disk's fsyncs, which on a shared VM can
make the server alone take seconds for the 10 bulk requests (the table's
"server alone" line says how long). Writes a Markdown table to
Benchmarks/results/client-lan.md (client-lan-tmpfs.md); docs/PERFORMANCE.md's figures
are copied by hand.
Needs root (network namespaces), like bench-lan.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import bench_lan  # noqa: E402
from samples import sample  # noqa: E402

TOOL = os.environ.get("MOCKCLOUD_SYNC_BIN") or os.path.join(REPO, ".build", "release", "mockcloud-sync")
LIBRARY = os.path.join(REPO, ".build", "release", "client-bench")
SAMPLES, BATCH, RUNS = 10_000, 1000, 3
URL = f"https://{bench_lan.SERVER_ADDR}:{bench_lan.PORT}"


def wire(lab):
    out = subprocess.run(["ip", "netns", "exec", lab.phone_ns, "sh", "-c",
                          "cat /sys/class/net/mclan0/statistics/rx_bytes /sys/class/net/mclan0/statistics/tx_bytes"],
                         capture_output=True, text=True, check=True).stdout.split()
    return sum(int(x) for x in out)


def timed(lab, cmd, **kw):
    b0, t0 = wire(lab), time.perf_counter()
    r = subprocess.run(["ip", "netns", "exec", lab.phone_ns, *cmd], capture_output=True, text=True, **kw)
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        bench_lan.die(f"{cmd[0]} failed ({r.returncode}): {r.stderr[-800:]}")
    return seconds, wire(lab) - b0, r.stdout


def library_command(lab, transport, ca, *args):
    """client-bench over `transport`; URLSession on Linux trusts the system's
    store, so its run sees /etc/ssl/certs as the box's CA alone."""
    cmd = [LIBRARY, "--transport", transport, *args]
    if transport == "curl":
        return cmd
    store = os.path.join(lab.work, "urlsession-store")
    if not os.path.isdir(store):
        os.makedirs(store)
        shutil.copy(ca, os.path.join(store, "ca-certificates.crt"))
        digest = subprocess.run(["openssl", "x509", "-hash", "-noout", "-in", ca], capture_output=True, text=True,
                                check=True).stdout.strip()
        os.symlink("ca-certificates.crt", os.path.join(store, digest + ".0"))
    return ["unshare", "-m", "sh", "-c", 'mount --bind "$0" /etc/ssl/certs && exec "$@"', store, *cmd]


def minimum(requests, wire_bytes):
    return (bench_lan.HANDSHAKE_RTTS + requests) * bench_lan.RTT + wire_bytes * 8 / (bench_lan.RATE_MBIT * 1e6)


def parse_args():
    """The command line, --out defaulting to the results file for the data's place."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="default Benchmarks/results/client-lan.md (client-lan-tmpfs.md with --tmpfs)")
    ap.add_argument("--tmpfs", action="store_true",
                    help="the stack's data (and the folders) on /dev/shm: the client and the link without this disk's fsyncs")
    args = ap.parse_args()
    args.out = args.out or os.path.join(REPO, "Benchmarks", "results",
                                        "client-lan-tmpfs.md" if args.tmpfs else "client-lan.md")
    return args


def library_run(lab, transport, ca, *args):
    """client-bench over `transport` across the link; (its own seconds, wire bytes)."""
    _, b, out = timed(lab, library_command(lab, transport, ca, *args))
    result = json.loads(out)
    assert result["items"] == SAMPLES, out
    return result["seconds"], b


def tool_push(lab, common, run, i):
    """Run i's samples written as files and pushed by mockcloud-sync; (seconds, wire bytes)."""
    folder = os.path.join(lab.work, f"push-{i}")
    os.makedirs(folder)
    for n in range(SAMPLES):
        with open(os.path.join(folder, f"s-{n:06d}.json"), "w") as f:
            json.dump(sample(n, run + i), f)
    s, b, out = timed(lab, [TOOL, "push", folder, *common, "--user-key", f"push-{run}-{i}", "--device-id", "mirror-1"])
    assert json.loads(out)["stored"] == SAMPLES, out
    return s, b


def curl_push_command(lab, ca, run, i):
    """curl sending run i's samples as the 10 bulk bodies, made beforehand, on one connection."""
    cmd = ["curl", "-sS", "--fail", "--http2", "--cacert", ca, "-o", "/dev/null"]
    for first in range(0, SAMPLES, BATCH):
        path = os.path.join(lab.work, f"bulk-{i}-{first}.json")
        with open(path, "w") as f:
            json.dump({"messages": [{"id": f"c-{n:06d}", "version": 1, "body": sample(n, run + i)}
                                    for n in range(first, first + BATCH)]}, f)
        if first:
            cmd.append("--next")
            cmd += ["-sS", "--fail", "--http2", "--cacert", ca, "-o", "/dev/null"]
        cmd += ["-H", f"X-User-Key: curl-{run}-{i}", "-H", "Content-Type: application/json",
                "--data-binary", "@" + path, URL + "/inbox:bulk"]
    return cmd


def push_runs(lab, ca, common, run):
    """RUNS pushes of SAMPLES each by mockcloud-sync, the library over each
    transport and curl, and the server's own time for curl's; lists of
    (seconds, wire bytes): (tool, curl, CurlTransport, URLSessionTransport, server alone)."""
    pushes, curls, library_pushes, session_pushes, server_only = [], [], [], [], []
    for i in range(RUNS):
        pushes.append(tool_push(lab, common, run, i))
        lines = os.path.join(lab.work, f"samples-{i}.txt")
        with open(lines, "w") as f:
            for n in range(SAMPLES):
                f.write(f"l-{n:06d} 1 {json.dumps(sample(n, run + i))}\n")
        for transport, results in (("curl", library_pushes), ("urlsession", session_pushes)):
            results.append(library_run(lab, transport, ca, "push", URL, ca, f"lib-{transport}-{run}-{i}", lines))
        cmd = curl_push_command(lab, ca, run, i)
        curls.append(timed(lab, cmd)[:2])
        # The server's own time for the same work: curl in the server's
        # namespace (no link), the same bodies under another key.
        local = [c.replace(f"X-User-Key: curl-{run}-{i}", f"X-User-Key: local-{run}-{i}") for c in cmd]
        t0 = time.perf_counter()
        subprocess.run(lab.in_server(*local), check=True, capture_output=True)
        server_only.append((time.perf_counter() - t0, 0))
    return pushes, curls, library_pushes, session_pushes, server_only


def pull_runs(lab, ca, common, run):
    """RUNS pulls of the first push's feed by mockcloud-sync, the library over
    each transport and curl per page; lists of (seconds, wire bytes):
    (tool, curl, CurlTransport, URLSessionTransport)."""
    pulls, curl_pulls, library_pulls, session_pulls = [], [], [], []
    for i in range(RUNS):
        folder = os.path.join(lab.work, f"pull-{i}")
        s, b, out = timed(lab, [TOOL, "pull", folder, *common, "--user-key", f"push-{run}-0"])
        assert json.loads(out)["messages"] == SAMPLES, out
        pulls.append((s, b))
        for transport, results in (("curl", library_pulls), ("urlsession", session_pulls)):
            results.append(library_run(lab, transport, ca, "pull", URL, ca, f"push-{run}-0"))
        script = ('a=""; n=0; while :; do '
                  f'p=$(curl -sS --fail --compressed --http2 --cacert {ca} -H "X-User-Key: push-{run}-0" '
                  f'"{URL}/inbox?limit=1000${{a:+&anchor=$a}}") || exit 1; '
                  'a=$(printf %s "$p" | python3 -c "import json,sys; d=json.load(sys.stdin); print(d[\'anchor\']); sys.exit(0 if d[\'hasMore\'] else 3)"); '
                  'r=$?; n=$((n+1)); [ $r -eq 3 ] && break; [ $r -ne 0 ] && exit 1; done; echo $n')
        curl_pulls.append(timed(lab, ["bash", "-c", script])[:2])
    return pulls, curl_pulls, library_pulls, session_pulls


def row(label, runs, requests):
    """A table row of the median run against the round-trip-bound minimum; (row, seconds, minimum)."""
    runs = sorted(runs)
    s, b = runs[len(runs) // 2]
    floor = minimum(requests, b)
    return (f"| {label} | {s * 1000:,.0f} ms ({runs[0][0] * 1000:,.0f}–{runs[-1][0] * 1000:,.0f}) | {requests} | "
            f"{b:,} | {floor * 1000:,.0f} ms | {s / floor:.2f}× |"), s, floor


def report(args, load, link, pushed, pulled):
    """The Markdown table, the server's own time and the targets' verdicts."""
    pushes, curls, library_pushes, session_pushes, server_only = pushed
    pulls, curl_pulls, library_pulls, session_pulls = pulled
    r0, push_s, push_floor = row("push 10,000 samples, MockCloudClient `upload`, CurlTransport", library_pushes,
                                 SAMPLES // BATCH)
    r0u, session_push_s, session_push_floor = row("push 10,000 samples, MockCloudClient `upload`, URLSessionTransport",
                                                  session_pushes, SAMPLES // BATCH)
    r1, tool_s, _ = row("push 10,000 samples as files, `mockcloud-sync push`", pushes, SAMPLES // BATCH)
    r2, curl_s, _ = row("push 10,000 samples, curl, 10 bulk bodies made beforehand, one connection", curls, SAMPLES // BATCH)
    server_s = sorted(server_only)[len(server_only) // 2][0]
    r3, pull_s, _ = row("pull 10,000 messages, gzip, MockCloudClient `changes(since: nil)`, CurlTransport", library_pulls,
                        SAMPLES // BATCH)
    r3u, session_pull_s, _ = row("pull 10,000 messages, gzip, MockCloudClient `changes(since: nil)`, URLSessionTransport",
                                 session_pulls, SAMPLES // BATCH)
    r4, tool_pull_s, _ = row("pull 10,000 messages, gzip, `mockcloud-sync pull` into a folder", pulls, SAMPLES // BATCH)
    r5, curl_pull_s, _ = row("pull 10,000 messages, gzip, curl per page (a connection each)", curl_pulls, SAMPLES // BATCH)
    return "\n".join([
        f"Measured by `make bench-client` on {time.strftime('%Y-%m-%d')}, commit `{bench_lan.git_commit()}`, "
        f"{os.cpu_count()} cores (load average {load:.1f} at the start); link: {link}, {bench_lan.DELAY_MS:g} ms each way, {bench_lan.RATE_MBIT:g} Mbit/s; "
        f"data {'on tmpfs (--tmpfs)' if args.tmpfs else 'on disk'}; median of {RUNS} (range).", "",
        "| work | time | requests | bytes on the wire | round-trip-bound minimum | × minimum |",
        "| --- | --- | --- | --- | --- | --- |", r0, r0u, r1, r2, r3, r3u, r4, r5, "",
        f"The server alone (the same 10 bulk bodies by curl inside the server's namespace, no link): "
        f"{server_s * 1000:,.0f} ms (median of {RUNS}).", "",
        f"- push through the client: {push_s / push_floor:.2f}× the round-trip-bound minimum (target ≤ 1.5×) "
        f"**{'met' if push_s <= 1.5 * push_floor else 'missed'}**, {push_s / max(push_floor, server_s):.2f}× the larger of that "
        f"minimum and the server's own time; mockcloud-sync {tool_s * 1000:,.0f} ms, "
        f"curl {curl_s * 1000:,.0f} ms",
        f"- pull of 10,000 with gzip through the client: {pull_s * 1000:,.0f} ms (target < 500 ms) "
        f"**{'met' if pull_s < 0.5 else 'missed'}**; mockcloud-sync into a folder {tool_pull_s * 1000:,.0f} ms, "
        f"curl {curl_pull_s * 1000:,.0f} ms",
        f"- URLSessionTransport (FoundationNetworking): push {session_push_s * 1000:,.0f} ms, "
        f"{session_push_s / session_push_floor:.2f}× the minimum ({session_push_s / push_s:.2f}× CurlTransport's); "
        f"pull {session_pull_s * 1000:,.0f} ms ({session_pull_s / pull_s:.2f}× CurlTransport's)",
    ])


def main():
    """The link and the stack, the pushes, then the pulls, then the report."""
    args = parse_args()
    for program in (TOOL, LIBRARY):
        if not os.access(program, os.X_OK):
            bench_lan.die(f"no {program}: run make build")
    load = os.getloadavg()[0]
    lab = bench_lan.Lab()
    if args.tmpfs:
        shutil.rmtree(lab.work)
        lab.work = tempfile.mkdtemp(prefix="mclan.", dir="/dev/shm")
    try:
        lab.make_link()
        lab.start_stack()
        ca = os.path.join(lab.stack.run, "tls", "ca.crt")
        common = ["--url", URL, "--ca", ca, "--json"]
        run = int(time.time())
        pushed = push_runs(lab, ca, common, run)
        pulled = pull_runs(lab, ca, common, run)
    finally:
        lab.close()
    text = report(args, load, lab.link, pushed, pulled)
    print(text)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
