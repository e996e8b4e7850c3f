#!/usr/bin/env python3
"""`make bench`: what one request costs, beside a C CGI floor, in one run.

    python3 Benchmarks/bench.py [--peer path/to/python_mock_cloud.py]

Starts three stacks with nginx/mockcloud-nginx.sh on free 127.0.0.1 ports:
cgi-bin/ in the CGI mode (ours) and in the FastCGI mode
(MOCKCLOUD_MODE=fastcgi), and Benchmarks/floor.c built static and
installed as both programs (the floor), each with its own temporary data and
run directory; nginx answering a fixed body itself (the ceiling, same TLS);
with --peer, also the Python mock cloud over TLS, and its same handlers
under uvicorn + uvloop + httptools with 2 workers (the tuned peer,
Benchmarks/tuned/, from the venv packaging/deps.sh bench makes), all on
the same certificate. Then, in one run:

1. hyperfine -N on the programs themselves, the CGI request in hyperfine's
   environment, in interleaved rounds: process start, with and without HMAC
   signing, and the feed page at 100 and 100,000 messages; then each
   request's page faults, CPU time and system calls.
2. wrk through nginx + TLS, keep-alive, interleaved round by round, the
   order turning each round: GET and PUT /user/settings (every server;
   the ceiling GET only), PUT /inbox/<id>
   (a new id each request) and a feed page after the newest 10 changes, of an
   inbox of 100 and of 100,000 messages.
3. Binary sizes.
4. Bulk writes (bulk_bench.py): messages stored per second through
   POST /inbox:bulk of 500 versus single PUTs, and what one item costs.

The large inbox is written straight in the store's on-disk format (the
harness's Tests/support/formats.py, checked against the programs by `make
test`), which takes seconds, not the minutes that 100,000 requests would. Everything runs on 127.0.0.1 and every
server started here is stopped by PID at the end. The tables go to stdout
and Benchmarks/results/latest.md; docs/PERFORMANCE.md's figures are a
person's to update from them. Only the standard library and Tests/support/;
the tools are wrk, hyperfine and a C compiler.
"""
import argparse
import atexit
import collections
import datetime
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CGI_BIN = os.path.join(REPO, "cgi-bin")
LUA = os.path.join(HERE, "wrk", "report.lua")
# packaging/deps.sh bench makes it (Benchmarks/tuned/requirements.txt).
TUNED_PYTHON = os.path.join(REPO, ".build", "bench-venv", "bin", "python")
sys.dont_write_bytecode = True     # no __pycache__ in the repository
sys.path.insert(0, os.path.join(REPO, "Tests", "support"))
import bulk_bench  # noqa: E402  (the bulk row; it imports nothing of this file)
import cgi_program  # noqa: E402
import formats  # noqa: E402
import stack  # noqa: E402
import suite  # noqa: E402

SETTINGS_BODY = (b'{"updatedAt": "20260518T044304.095000Z", "weightCalibrationFactor": 0.9990998620664758, '
                 b'"units": "metric", "height": 172, "reminders": {"weighIn": "07:30", "enabled": true}}')
SMALL, LARGE = 100, 100_000
PAGE = 10

# The contract's targets (STYLE.md explains why a durable PUT is judged at 2x the peer).
TARGET_GET_FLOOR, TARGET_PUT_FLOOR = 0.9, 0.85
TARGET_GET_PEER, TARGET_PUT_PEER = 3.0, 2.0
TARGET_START, TARGET_FEED_GROWTH = 1.2, 1.2


def log(*words):
    print("bench:", *words, file=sys.stderr, flush=True)


def die(message):
    log(message)
    sys.exit(1)


def start_stack(servers, name, work, cgi_bin, **settings):
    """nginx + fcgiwrap + `cgi_bin` through the harness (Tests/support/stack.py),
    in `servers` (stopped at exit) even when it fails to start."""
    # The per-address cap as served: wrk's connections (8 by default) are
    # 8 requests in progress, half the cap.
    server = stack.Stack(work, name, cgi_bin, **settings)
    servers.append(server)
    try:
        return server.start()
    except RuntimeError as error:
        die(f"could not start the {name} stack:\n{error}")


class Peer:
    """A Python peer over TLS (the stock one, or the same handlers under
    uvicorn: `tuned`), in a session of its own, stopped by its PID."""

    def __init__(self, name, script, work, cert, tuned=False):
        self.name = name
        self.port = stack.free_port()
        self.data = os.path.join(work, f"{name}-data")
        os.makedirs(self.data, mode=0o700)
        self.log = open(os.path.join(work, f"{name}.log"), "wb")
        env = None
        if tuned:
            # The same handlers, imported from the peer's file (Benchmarks/tuned/peer_asgi.py),
            # under uvicorn with uvloop and httptools, 2 workers: one per core.
            env = dict(os.environ, TUNED_PEER=os.path.abspath(script), TUNED_PEER_ROOT=self.data)
            command = [TUNED_PYTHON, "-m", "uvicorn", "peer_asgi:app", "--app-dir", os.path.join(HERE, "tuned"),
                       "--workers", "2", "--loop", "uvloop", "--http", "httptools", "--no-access-log",
                       "--log-level", "warning", "--host", "127.0.0.1", "--port", str(self.port),
                       "--ssl-certfile", cert[0], "--ssl-keyfile", cert[1]]
        else:
            command = [sys.executable, script, "--root", self.data, "--host", "127.0.0.1", "--port", str(self.port),
                       "--cert", cert[0], "--keyfile", cert[1]]
        # start_new_session: a Ctrl-C to `make bench` reaches us, not it; we stop it.
        self.proc = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                     start_new_session=True)
        for _ in range(300):
            try:
                https(self.port, "GET", "/user/settings", {"X-User-Key": "probe"})
                return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.1)
        die(f"the {name} did not answer on port {self.port}; see {self.log.name}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


class Ceiling:
    """nginx answering a fixed body itself, through the same TLS setup and
    worker count as the stacks' (their rendered nginx.conf, its server's
    routes replaced by one `return`): what no program behind it can beat."""

    def __init__(self, work, ours_conf, body):
        self.name = "ceiling"
        self.port = stack.free_port()
        self.dir = os.path.join(work, "ceiling")
        os.makedirs(os.path.join(self.dir, "logs"))
        conf = open(ours_conf).read()
        run = os.path.dirname(ours_conf)
        head, server = conf.split("    server {", 1)
        keep = [line for line in server.splitlines()
                if line.strip().startswith(("listen", "ssl_", "server_name", "add_header"))]
        keep = [f"        listen 127.0.0.1:{self.port} ssl http2;" if line.strip().startswith("listen") else line
                for line in keep]
        body_text = body.decode().replace("\\", "\\\\").replace("'", "\\'")
        conf = (head.replace(run, self.dir).replace(f"{self.dir}/nginx.pid", f"{self.dir}/ceiling.pid")
                + "    server {\n" + "\n".join(keep) + "\n"
                + f"        location / {{ default_type application/json; return 200 '{body_text}'; }}\n    }}\n}}\n")
        # Only what the fixed answer needs: no include of the stacks' zones.
        conf = "\n".join(line for line in conf.splitlines() if "mockcloud-http.conf" not in line)
        for sub in ("tmp/body", "tmp/fastcgi", "tmp/proxy", "tmp/scgi", "tmp/uwsgi"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        self.conf = os.path.join(self.dir, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write(conf)
        if os.getuid() == 0:
            subprocess.run(["chown", "-R", "--reference", run, self.dir], check=True)
        result = subprocess.run([shutil.which("nginx") or "/usr/sbin/nginx", "-p", self.dir + "/", "-c", self.conf,
                                 "-e", os.path.join(self.dir, "logs", "error.log")],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if result.returncode != 0:
            die(f"the fixed-body nginx did not start:\n{result.stdout}")
        for _ in range(100):
            try:
                https(self.port, "GET", "/user/settings", {"X-User-Key": "probe"})
                return
            except OSError:
                time.sleep(0.1)
        die(f"the fixed-body nginx does not answer on port {self.port}")

    def stop(self):
        try:
            pid = int(open(os.path.join(self.dir, "ceiling.pid")).read())
        except (OSError, ValueError):
            return
        if open(f"/proc/{pid}/comm").read().strip() == "nginx":
            os.kill(pid, signal.SIGTERM)
            for _ in range(100):
                if not os.path.exists(f"/proc/{pid}"):
                    break
                time.sleep(0.1)


def https(port, method, path, headers, body=None):
    conn = suite.connect(f"https://127.0.0.1:{port}", timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


# ---------------------------------------------------------------- seeding

def cached_inbox(seed, key, count):
    """A seeded inbox of `count` messages under seed/ (seeded first when it
    is not there whole) and the anchor of its newest PAGE changes."""
    directory = os.path.join(seed, f"{key}-{count}")
    done = os.path.join(directory, "complete")
    if not os.path.exists(done):
        log(f"seeding an inbox of {count:,} messages in {os.path.relpath(directory, REPO)} (kept for later runs)")
        if os.path.exists(directory):
            shutil.rmtree(directory)
        os.makedirs(seed, mode=0o700, exist_ok=True)
        formats.write_inbox(directory, count, os.urandom(8).hex(), body_of=lambda seq: {
            "kg": round(60 + seq % 300 / 10, 1), "fat": 18.2, "measuredAt": "2026-05-18T04:43:04.095Z",
            "device": "mirror-1"})
        os.sync()  # nothing left for writeback to do while we measure
        open(done, "w").close()
    with open(os.path.join(directory, "changes.log"), "rb") as f:
        generation = formats.decode_header(f.read(formats.RECORD)).generation
    return directory, f"{generation}.0.{count - PAGE}"


def run_cgi(program, env, body=b""):
    """Runs a CGI program directly (`env` has the body's CONTENT_LENGTH);
    returns (status, body bytes)."""
    out = subprocess.run([program], input=body, env=env, stdout=subprocess.PIPE, check=False).stdout
    status, _, payload, _ = cgi_program.parse_output(out)
    return status, payload


def anatomy(program, env_for, body, runs, strace, work):
    """What one request costs the process itself, averaged over `runs` starts:
    minor page faults and CPU time (from wait4's rusage), and the system
    calls strace counts once (when strace is installed). `env_for(i)` is the
    environment of run i, for this body."""
    faults = cpu = 0.0
    for i in range(runs):
        env = env_for(i)
        r, w = os.pipe()
        # posix_spawn (vfork-like): no copy-on-write faults of ours counted as the program's.
        pid = os.posix_spawn(program, [program], env, file_actions=[
            (os.POSIX_SPAWN_DUP2, r, 0), (os.POSIX_SPAWN_CLOSE, w),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)])
        os.close(r)
        os.write(w, body)
        os.close(w)
        _, _, usage = os.wait4(pid, 0)
        faults += usage.ru_minflt + usage.ru_majflt
        cpu += usage.ru_utime + usage.ru_stime
    calls = None
    if strace:
        out = os.path.join(work, "strace.txt")
        subprocess.run([strace, "-f", "-c", "-o", out, program], input=body, env=env_for(runs),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for line in open(out):
            fields = line.split()
            if fields and fields[-1] == "total":
                calls = int(fields[3])
    return {"faults": faults / runs, "cpu": cpu / runs, "syscalls": calls}


def cgi_env(data, method, uri, key, query="", body=b"", **extra):
    return cgi_program.environment(method, uri, data, {"X-User-Key": key}, query, body, extra=extra)


# ---------------------------------------------------------------- wrk

class Series:
    """Every wrk run of one route on one server, merged."""

    def __init__(self):
        self.requests = 0
        self.seconds = 0.0
        self.errors = 0
        self.rounds = []
        self.histogram = collections.Counter()

    def add(self, report):
        self.requests += report["requests"]
        self.seconds += report["duration_us"] / 1e6
        self.errors += sum(report[k] for k in ("connect_errors", "read_errors", "write_errors", "status_errors",
                                               "timeouts"))
        self.rounds.append(report["requests"] / (report["duration_us"] / 1e6))
        for value, count in report["histogram"]:
            self.histogram[value] += count

    @property
    def rps(self):
        return self.requests / self.seconds if self.seconds else 0.0

    def percentile(self, p):
        total = sum(self.histogram.values())
        wanted, seen = total * p / 100.0, 0
        for value in sorted(self.histogram):
            seen += self.histogram[value]
            if seen >= wanted:
                return value / 1000.0  # ms
        return float("nan")


def wrk(port, path, mode, key, prefix, seconds, threads, connections, raw_log):
    cmd = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", "--timeout", "5s",
           "-s", LUA, f"https://127.0.0.1:{port}{path}", "--", mode, key, prefix]
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    raw_log.write("$ " + " ".join(cmd) + "\n" + "\n".join(
        line for line in result.stdout.splitlines() if not line.startswith("BENCH ")) + "\n\n")
    for line in result.stdout.splitlines():
        if line.startswith("BENCH "):
            return json.loads(line[6:])
    die(f"wrk gave no summary:\n{result.stdout}")


# ---------------------------------------------------------------- hyperfine

def hyperfine(name, program, env, warmup, runs, work):
    """Every run's seconds of `program` started with `env` (hyperfine -N)."""
    export = os.path.join(work, "hyperfine-" + name.replace(" ", "_").replace("/", "_") + ".json")
    full_env = dict(env, PATH=os.environ.get("PATH", "/usr/bin:/bin"))
    result = subprocess.run(
        ["hyperfine", "-N", "--warmup", str(warmup), "--runs", str(runs), "--style", "none",
         "--export-json", export, "--command-name", name, program],
        env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        die(f"hyperfine failed for {name}:\n{result.stdout}")
    with open(export) as f:
        return json.load(f)["results"][0]["times"]


def interleaved_starts(items, warmup, runs, rounds, work):
    """hyperfine on each (key, program, env) in `rounds` interleaved rounds
    of runs/rounds starts, so that a slow spell of the shared machine hits
    every program alike; the statistics are over all the runs."""
    times = collections.defaultdict(list)
    per_round = max(1, runs // rounds)
    for round_ in range(rounds):
        turn = round_ % len(items)
        for key, program, env in items[turn:] + items[:turn]:
            times[key] += hyperfine(" ".join(map(str, key)), program, env, max(1, warmup // rounds), per_round, work)
    return {key: {"mean": statistics.mean(t), "median": statistics.median(t),
                  "stddev": statistics.stdev(t) if len(t) > 1 else 0.0, "min": min(t)}
            for key, t in times.items()}


# ---------------------------------------------------------------- formatting

def ms(seconds):
    return f"{seconds * 1000:.3f} ms"


def ratio(a, b):
    return f"{a / b:.2f}×" if a and b else "–"


def verdict(ok):
    return "**met**" if ok else "**missed**"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------- main

SETTINGS_PROGRAM = os.path.join(CGI_BIN, "user-settings")
INBOX_PROGRAM = os.path.join(CGI_BIN, "inbox")


def parse_args():
    """The command line; what `make bench` passes through BENCH_ARGS and PEER."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer", help="python_mock_cloud.py to compare against (GET/PUT /user/settings)")
    # Many short rounds rather than a few long ones: on a shared 2-core machine
    # a burst of someone else's work then hits every server alike.
    ap.add_argument("--seconds", type=int, default=3, help="length of one wrk run (default 3)")
    # Six: with the order turning each round, each of three servers (two
    # for the inbox routes) takes every position equally often.
    ap.add_argument("--rounds", type=int, default=6, help="interleaved rounds per route and server, of wrk and of hyperfine (default 6)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=100, help="hyperfine warm-up runs")
    ap.add_argument("--runs", type=int, default=1000, help="hyperfine runs per program, split over the rounds")
    ap.add_argument("--large", type=int, default=LARGE, help="messages in the large inbox")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    return ap.parse_args()


def check_prerequisites(args):
    """Stops with what to run when a tool or program is missing; the C compiler for floor.c."""
    if args.peer and not os.path.isfile(args.peer):
        die(f"--peer: no such file {args.peer}")
    for tool in ("wrk", "hyperfine"):
        if not shutil.which(tool):
            die(f"{tool} is missing: run 'packaging/deps.sh bench' (as root)")
    for program in ("user-settings", "inbox"):
        if not os.access(os.path.join(CGI_BIN, program), os.X_OK):
            die(f"cgi-bin/{program} is missing: run 'make install'")
    return shutil.which("cc") or shutil.which("clang") or die("no C compiler (cc or clang) for floor.c")


def clean_up_at_exit(servers, work, keep):
    """Stops `servers` and removes `work` (unless `keep`) at exit, a signal included."""
    def cleanup():
        for server in reversed(servers):
            server.stop()
        if keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    atexit.register(cleanup)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(130))


def build_floor(compiler, work):
    """The floor: one static binary under both program names, with the
    change-log format from the harness's one definition; its folder and its path."""
    floor_bin = os.path.join(work, "floor-bin")
    os.makedirs(floor_bin)
    floor = os.path.join(floor_bin, "user-settings")
    subprocess.run([compiler, "-O2", "-static", "-I", formats.write_c_header(work), "-o", floor,
                    os.path.join(HERE, "floor.c")], check=True)
    os.link(floor, os.path.join(floor_bin, "inbox"))
    return floor_bin, floor


def start_servers(servers, work, floor_bin, peer_script):
    """Our stack in both modes, the floor's, nginx's fixed-body ceiling and,
    when asked for, the stock and the tuned peer, all on one certificate,
    each added to `servers`; the contenders by name."""
    log("starting the stacks")
    ours = start_stack(servers, "ours", work, CGI_BIN)
    cert = (os.path.join(ours.run, "tls", "cert.pem"), os.path.join(ours.run, "tls", "key.pem"))
    same_cert = dict(MOCKCLOUD_CERT=cert[0], MOCKCLOUD_CERT_KEY=cert[1])
    named = {"ours": ours,
             "fastcgi": start_stack(servers, "fastcgi", work, CGI_BIN, MOCKCLOUD_MODE="fastcgi", **same_cert),
             "floor": start_stack(servers, "floor", work, floor_bin, **same_cert)}
    servers.append(Ceiling(work, os.path.join(ours.run, "nginx.conf"), SETTINGS_BODY))
    named["ceiling"] = servers[-1]
    if peer_script:
        for name, tuned in (("peer", False), ("tuned", True)):
            servers.append(Peer(name, peer_script, work, cert, tuned=tuned))
            named[name] = servers[-1]
    return named


def seed_data(servers, stacks, work, large):
    """The small and large inboxes in both stacks' data and hyperfine's, and
    u1's settings on every server; the inboxes' anchors and hyperfine's data directory."""
    # The seeded inboxes are only read, so they are made once and kept in
    # Benchmarks/out/ (git-ignored): deleting 100,000 files takes from seconds
    # to minutes here, depending on what else the disk is doing.
    seed = os.path.join(HERE, "out", "seed-v1")
    anchors, seeded = {}, {}
    for key, count in (("feed-small", SMALL), ("feed-large", large)):
        seeded[key], anchors[key] = cached_inbox(seed, key, count)
    hdata = os.path.join(work, "hyperfine-data")
    ours = stacks[0]
    for data in [stack_.data for stack_ in stacks] + [hdata]:
        os.makedirs(os.path.join(data, "inbox"), mode=0o700, exist_ok=True)
        for key in anchors:
            # Hard links, not a symbolic link: the programs refuse a linked
            # folder in the data directory (docs/API.md §5), and the feed
            # only reads the files.
            subprocess.run(["cp", "-al", seeded[key], os.path.join(data, "inbox", key)], check=True)
        # A stack started as root serves as its own user (the data
        # directory's owner, Tests/support/stack.sh): the seeded inboxes
        # become that user's too. The three copies are hard links of one set
        # of files, so they get one owner: the served stack's (root, who runs
        # hyperfine, reads them whatever their owner).
        subprocess.run(["chown", "-R", "--reference", ours.data, os.path.join(data, "inbox")], check=True)

    for server in servers:
        if server.name == "ceiling":
            continue
        status, body = https(server.port, "PUT", "/user/settings", {"X-User-Key": "u1"}, SETTINGS_BODY)
        if status != 200:
            die(f"{server.name}: PUT /user/settings answered {status}: {body[:200]!r}")
    return anchors, hdata


def check_requests(stacks, feed):
    """Every request the benchmark sends, once, with the answer it must get;
    the feed pages the same from each stack (ours in both modes, the floor)."""
    pages = {}
    for server in stacks:
        checks = [("GET", "/user/settings", "u1", None, 200),
                  ("PUT", "/user/settings", "p0", SETTINGS_BODY, 200),
                  ("PUT", "/inbox/check-1", "writer", b'{"kg": 71.3}', 201),
                  ("GET", feed["feed-small"], "feed-small", None, 200),
                  ("GET", feed["feed-large"], "feed-large", None, 200)]
        for method, path, key, body, want in checks:
            status, answer = https(server.port, method, path, {"X-User-Key": key}, body)
            if status != want:
                die(f"{server.name}: {method} {path} answered {status}, not {want}: {answer[:300]!r}")
            if path.startswith("/inbox?"):
                page = json.loads(answer)
                if len(page["messages"]) != PAGE or page["hasMore"] is not False:
                    die(f"{server.name}: {path} is not the last {PAGE} messages: {answer[:300]!r}")
                pages.setdefault(path, []).append(page)
    for path, answers in pages.items():
        if any(answer != answers[0] for answer in answers):
            die(f"{', '.join(s.name for s in stacks)} answer {path} differently")


def signed_settings(work, hdata):
    """An HMAC key file, and in hyperfine's data u1's settings unsigned and
    s1's written with signing on, so its GET verifies a MAC; the key file."""
    hkeys = os.path.join(work, "hmac.keys")
    secret = subprocess.run(["openssl", "rand", "-hex", "32"], stdout=subprocess.PIPE, text=True,
                            check=True).stdout.strip()
    fd = os.open(hkeys, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, f"bench:{secret}\n".encode())
    os.close(fd)
    for key, extra in (("u1", {}), ("s1", {"MOCKCLOUD_HMAC_KEYS": hkeys})):
        status, body = run_cgi(SETTINGS_PROGRAM, cgi_env(hdata, "PUT", "/user/settings", key, body=SETTINGS_BODY,
                                                         **extra), SETTINGS_BODY)
        if status != 200:
            die(f"seeding {key} for hyperfine: {status} {body[:200]!r}")
    if not os.path.exists(os.path.join(hdata, "user_settings", "s1.json.mac")):
        die("user-settings with MOCKCLOUD_HMAC_KEYS wrote no MAC sidecar")
    return hkeys


def measure_starts(args, work, hdata, floor, feed):
    """hyperfine on process start, HMAC on and off, and on the feed page at
    both sizes, ours beside the floor; (start results, feed results)."""
    log("hyperfine: process start and feed pages")
    hkeys = signed_settings(work, hdata)
    one_message = "/inbox/m0000050"
    starts = [
        ("C floor", "GET /user/settings", floor, cgi_env(hdata, "GET", "/user/settings", "u1")),
        ("user-settings", "GET /user/settings", SETTINGS_PROGRAM, cgi_env(hdata, "GET", "/user/settings", "u1")),
        ("user-settings, HMAC on", "GET /user/settings (verifies its MAC)", SETTINGS_PROGRAM,
         cgi_env(hdata, "GET", "/user/settings", "s1", MOCKCLOUD_HMAC_KEYS=hkeys)),
        ("C floor", f"GET {one_message}", floor, cgi_env(hdata, "GET", one_message, "feed-small")),
        ("inbox", f"GET {one_message}", INBOX_PROGRAM, cgi_env(hdata, "GET", one_message, "feed-small")),
    ]
    feeds = []
    for key, count in (("feed-small", SMALL), ("feed-large", args.large)):
        query = feed[key].split("?", 1)[1]
        for name, program in (("C floor", floor), ("inbox", INBOX_PROGRAM)):
            feeds.append((name, count, program, cgi_env(hdata, "GET", "/inbox", key, query)))
    for name, request, program, env in starts + [(n, f"feed {c}", p, e) for n, c, p, e in feeds]:
        status, body = run_cgi(program, env)
        if status != 200:
            die(f"{name} {request} answered {status}: {body[:200]!r}")
    measured = interleaved_starts(
        [((name, request), program, env) for name, request, program, env in starts]
        + [((name, count), program, env) for name, count, program, env in feeds],
        args.warmup, args.runs, args.rounds, work)
    start_results = [(name, request, measured[name, request]) for name, request, _, _ in starts]
    feed_results = {(name, count): measured[name, count] for name, count, _, _ in feeds}
    return start_results, feed_results


def measure_anatomy(work, hdata, floor, feed):
    """What each request costs the process (faults, CPU, system calls), ours
    and the floor's: a row per request. The writes go to a scratch copy of
    the keys so the measured data stays put."""
    log("per-request anatomy: page faults, CPU time, system calls")
    strace = shutil.which("strace")
    message = b'{"kg": 71.3, "fat": 18.2, "measuredAt": "2026-05-18T04:43:04.095Z", "device": "mirror-1"}'
    small_query = feed["feed-small"].split("?", 1)[1]
    anatomy_requests = [
        ("GET /user/settings", SETTINGS_PROGRAM, lambda who, i: cgi_env(hdata, "GET", "/user/settings", "u1"), b""),
        ("PUT /user/settings", SETTINGS_PROGRAM,
         lambda who, i: cgi_env(hdata, "PUT", "/user/settings", "a-" + who, body=SETTINGS_BODY), SETTINGS_BODY),
        # A new message id on every run, in an inbox of each program's own.
        ("PUT /inbox/<id>", INBOX_PROGRAM, lambda who, i: cgi_env(hdata, "PUT", f"/inbox/a{i}", "a-" + who, body=message),
         message),
        ("GET /inbox feed", INBOX_PROGRAM, lambda who, i: cgi_env(hdata, "GET", "/inbox", "feed-small", small_query),
         b""),
    ]
    anatomy_rows = []
    for label, program, env_for, body in anatomy_requests:
        anatomy_rows.append([label] + [
            anatomy(p, lambda i, who=who: env_for(who, i), body, 50, strace, work)
            for who, p in (("ours", program), ("floor", floor))])
    return anatomy_rows


STACKS = ("ours", "fastcgi", "floor")
PEERS = ("peer", "tuned")


def wrk_routes(feed, large):
    """What wrk loads: (label, path, mode, key, method, the servers that run it)."""
    return [
        ("GET /user/settings", "/user/settings", "get", "u1", "GET", STACKS + PEERS + ("ceiling",)),
        ("PUT /user/settings", "/user/settings", "put-settings", "p", "PUT", STACKS + PEERS),
        ("PUT /inbox/<id>", "/", "put-inbox", "writer", "PUT", STACKS),
        (f"GET /inbox feed, {SMALL} msgs", feed["feed-small"], "get", "feed-small", "GET", STACKS),
        (f"GET /inbox feed, {large:,} msgs", feed["feed-large"], "get", "feed-large", "GET", STACKS),
    ]


def measure_wrk(args, routes, named):
    """wrk on every route and server, in interleaved rounds after a warm-up;
    the merged Series by (route label, server name)."""
    out_dir = os.path.join(HERE, "out")
    os.makedirs(out_dir, exist_ok=True)
    raw = open(os.path.join(out_dir, "wrk.log"), "w")
    series = collections.defaultdict(Series)
    for label, path, mode, key, _, names in routes:
        contenders = [named[name] for name in names if name in named]
        log(f"wrk {label}: {args.rounds} rounds of {args.seconds}s on {', '.join(s.name for s in contenders)}")
        for server in contenders:  # warm-up, not counted
            wrk(server.port, path, mode, key, "warm", 1, args.threads, args.connections, raw)
        for round_ in range(1, args.rounds + 1):
            # The order turns each round: a run straight after another
            # server's run measured a few per cent slower here, and always
            # going first would put that on one server.
            turn = (round_ - 1) % len(contenders)
            for server in contenders[turn:] + contenders[:turn]:
                report = wrk(server.port, path, mode, key, f"r{round_}", args.seconds, args.threads,
                             args.connections, raw)
                series[label, server.name].add(report)
    raw.close()
    return series


def main():
    """The stacks and their data, the measurements in their order, the report."""
    args = parse_args()
    compiler = check_prerequisites(args)
    began = time.monotonic()
    load_before = open("/proc/loadavg").read().split()[:3]
    # Short: fcgiwrap's socket lives in the run directories (107-byte limit).
    work = tempfile.mkdtemp(prefix="mcb.", dir="/tmp")
    servers = []
    clean_up_at_exit(servers, work, args.keep)
    floor_bin, floor = build_floor(compiler, work)
    named = start_servers(servers, work, floor_bin, args.peer)
    stacks = [named[name] for name in STACKS]
    ours = named["ours"]
    anchors, hdata = seed_data(servers, stacks, work, args.large)
    feed = {key: f"/inbox?anchor={anchor}&limit={PAGE}" for key, anchor in anchors.items()}
    check_requests(stacks, feed)
    start_results, feed_results = measure_starts(args, work, hdata, floor, feed)
    anatomy_rows = measure_anatomy(work, hdata, floor, feed)
    # wrk last: minutes of load leave writeback and reclaim behind them,
    # which the process-start figures above (a quiet box, as a home server
    # mostly is) should not carry.
    routes = wrk_routes(feed, args.large)
    series = measure_wrk(args, routes, named)
    log(f"bulk: messages/s through POST /inbox:bulk of {bulk_bench.BATCH} vs single PUTs, {args.rounds} rounds")
    bulk = bulk_bench.measure(ours.port, ours.data, INBOX_PROGRAM, args.rounds)

    load_after = open("/proc/loadavg").read().split()[:3]
    report = render(args, series, routes, named, start_results, feed_results, anatomy_rows, floor, load_before,
                    load_after, time.monotonic() - began)
    report += "\n\n" + bulk_bench.render(bulk)
    print(report)
    results = os.path.join(HERE, "results")
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, "latest.md"), "w") as f:
        f.write(report + "\n")
    log(f"done in {time.monotonic() - began:.0f}s; tables in Benchmarks/results/latest.md "
        "(docs/PERFORMANCE.md's figures are updated by hand from them)")


def git_revision():
    """HEAD, with -dirty when the product differs from it (the files this
    benchmark writes itself do not count)."""
    def git(*args):
        return subprocess.run(["git", "-C", REPO, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True).stdout.strip()
    try:
        rev = git("rev-parse", "--short", "HEAD") or "unknown"
        changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!Benchmarks/results")
    except OSError:
        return "unknown"
    return rev + ("-dirty" if changed else "")


def render(args, series, routes, named, start_results, feed_results, anatomy_rows, floor, load_before, load_after,
           elapsed):
    """The report in Markdown: where it ran, a table per measurement, the
    binary sizes, and each target's verdict."""
    verdicts = []
    out = [heading(args, load_before, load_after, elapsed)]
    out += wrk_table(args, series, routes, named, verdicts)
    out += start_table(args, start_results, verdicts)
    out += feed_table(args, series, feed_results, verdicts)
    out += anatomy_table(anatomy_rows)
    sizes = [("C floor (static)", floor)] + [
        (p, os.path.join(CGI_BIN, p)) for p in ("user-settings", "inbox")]
    out += ["", "**Binary sizes**: " + ", ".join(
        f"{name} {os.path.getsize(path) / 2**20:.1f} MiB ({os.path.getsize(path):,} bytes)" for name, path in sizes)
        + ".", "", "**Targets** (the contract's; the FastCGI mode's goals are issue 37's):", ""]
    out += [f"- {v}" for v in verdicts]
    return "\n".join(out)


def heading(args, load_before, load_after, elapsed):
    """The report's first line: the command, day, commit, machine and load."""
    cpu = "unknown CPU"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    # The peer by its file name: where it lies on this machine is no reader's business.
    command = "PEER=…/" + os.path.basename(args.peer) + " make bench" if args.peer else "make bench"
    return ("Measured by `" + command + "` on " + datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
            + f", commit `{git_revision()}`: {os.cpu_count()} cores ({cpu}), Linux {platform.release()}; "
            f"load average {' '.join(load_before)} before, {' '.join(load_after)} after; {elapsed:.0f} s in all.")


SERVER_NAMES = {"ours": "**ours, CGI**", "fastcgi": "**ours, FastCGI**", "floor": "C floor (CGI)",
                "peer": "Python peer", "tuned": "tuned Python peer", "ceiling": "nginx, fixed body"}
# Issue 37's goals for the FastCGI mode, in the same run: GET at least the
# tuned peer's and 4x the CGI mode's (stretch: half the ceiling), PUT at
# least 2x the CGI mode's with every fsync kept.
GOAL_FASTCGI_GET_CGI, GOAL_FASTCGI_PUT_CGI, STRETCH_FASTCGI_CEILING = 4.0, 2.0, 0.5


def wrk_table(args, series, routes, named, verdicts):
    """The wrk table's lines, through nginx + TLS; its verdicts added to `verdicts`."""
    out = [
        "",
        f"**Through nginx + TLS** (wrk -t{args.threads} -c{args.connections}, keep-alive; {args.rounds} interleaved "
        f"rounds of {args.seconds} s per route and server, the order turning each round, after a 1 s warm-up; p50/p99 from the merged latency "
        "histograms). *CGI*: fcgiwrap starts a program per request (the default); *FastCGI*: the same programs "
        "as persistent workers (`MOCKCLOUD_MODE=fastcgi`); *C floor*: `Benchmarks/floor.c`, the same file work in "
        "static C behind the same nginx and fcgiwrap; *Python peer*: the stock Python mock cloud over TLS; *tuned "
        "Python peer*: its same handlers under uvicorn + uvloop + httptools, 2 workers, no fsync "
        "(`Benchmarks/tuned/`); *nginx, fixed body*: nginx answering the settings document itself, the ceiling.",
        "",
    ]
    rows = []
    for label, _, _, _, method, names in routes:
        measured = [name for name in names if name in named]
        rps = {name: series[label, name].rps for name in measured}
        for name in measured:
            s = series[label, name]
            rows.append([label, SERVER_NAMES[name], f"{s.rps:,.0f}", " / ".join(f"{r:,.0f}" for r in s.rounds),
                         f"{s.percentile(50):.2f} ms", f"{s.percentile(99):.2f} ms",
                         ratio(s.rps, rps["ours"]), ratio(s.rps, rps["floor"]),
                         ratio(s.rps, rps["tuned"]) if "tuned" in rps else "–", s.errors or ""])
        route_verdicts(label, method, rps, verdicts)
    out.append(table(["route", "server", "req/s", "req/s by round", "p50", "p99", "× CGI", "× C floor",
                      "× tuned peer", "errors"], rows))
    return out


def route_verdicts(label, method, rps, verdicts):
    """One route's verdicts: the CGI mode's against the floor and the stock
    peer (the contract's), the FastCGI mode's against issue 37's goals."""
    ours, floor = rps["ours"], rps["floor"]
    want = TARGET_GET_FLOOR if method == "GET" else TARGET_PUT_FLOOR
    # The contract sets throughput targets for /user/settings; the inbox
    # routes are held to the same ratios as a goal of ours.
    kind = "target" if label.endswith("/user/settings") else "goal, not one of the contract's targets:"
    verdicts.append(f"{label}, CGI: {ours / floor:.2f}× the C floor ({kind} ≥ {want}×) {verdict(ours / floor >= want)}")
    if rps.get("peer"):
        want = TARGET_GET_PEER if method == "GET" else TARGET_PUT_PEER
        verdicts.append(f"{label}, CGI: {ours / rps['peer']:.2f}× the Python peer (target ≥ {want}×) "
                        f"{verdict(ours / rps['peer'] >= want)}")
    fast = rps.get("fastcgi")
    if not fast or not label.endswith("/user/settings"):
        return
    want = GOAL_FASTCGI_GET_CGI if method == "GET" else GOAL_FASTCGI_PUT_CGI
    verdicts.append(f"{label}, FastCGI: {fast / ours:.2f}× the CGI mode (goal ≥ {want}×) {verdict(fast / ours >= want)}")
    if method == "GET" and rps.get("tuned"):
        verdicts.append(f"{label}, FastCGI: {fast / rps['tuned']:.2f}× the tuned Python peer (goal ≥ 1×) "
                        f"{verdict(fast >= rps['tuned'])}")
    if method == "GET" and rps.get("ceiling"):
        verdicts.append(f"{label}, FastCGI: {fast / rps['ceiling']:.2f}× nginx's fixed-body ceiling (stretch goal "
                        f"≥ {STRETCH_FASTCGI_CEILING}×) {verdict(fast / rps['ceiling'] >= STRETCH_FASTCGI_CEILING)}")


def start_table(args, start_results, verdicts):
    """The process-start table's lines, each program beside the C floor's
    same request; the HMAC verdict added to `verdicts`."""
    out = ["", f"**Process start** (hyperfine -N, {max(1, args.runs // args.rounds) * args.rounds} runs of each program in {args.rounds} interleaved "
           f"rounds after {max(1, args.warmup // args.rounds) * args.rounds} warm-up runs, the CGI request in hyperfine's environment, no nginx):", ""]
    rows = []
    c_by_request = {}
    for name, request, r in start_results:
        if name == "C floor":
            c_by_request[request.split(" (")[0]] = r
    for name, request, r in start_results:
        c = c_by_request[request.split(" (")[0]]
        rows.append([name, request, ms(r["mean"]), ms(r["median"]), ms(r["stddev"]),
                     ratio(r["mean"], c["mean"]), ratio(r["median"], c["median"])])
        if name == "user-settings, HMAC on":
            verdicts.append(f"process start with HMAC on: {r['median'] / c['median']:.2f}× C (median; mean "
                            f"{r['mean'] / c['mean']:.2f}×) (target ≤ {TARGET_START}×) "
                            f"{verdict(r['median'] / c['median'] <= TARGET_START)}")
    out.append(table(["program", "request", "mean", "median", "σ", "mean × C", "median × C"], rows))
    return out


def feed_table(args, series, feed_results, verdicts):
    """The feed-page table's lines, small inbox beside large; the growth
    verdict added to `verdicts`."""
    large = args.large
    out = ["", f"**Feed page** (`GET /inbox?anchor=…&limit={PAGE}`, the newest {PAGE} changes) at {SMALL} and "
           f"{large:,} stored messages, hyperfine on the program and wrk through nginx:", ""]
    rows = []
    small_label = f"GET /inbox feed, {SMALL} msgs"
    large_label = f"GET /inbox feed, {large:,} msgs"
    for name, server in (("inbox", "ours"), ("C floor", "floor")):
        s, l = feed_results[name, SMALL], feed_results[name, large]
        ws, wl = series[small_label, server], series[large_label, server]
        rows.append([name, ms(s["median"]), ms(l["median"]), ratio(l["median"], s["median"]),
                     f"{ws.rps:,.0f}", f"{wl.rps:,.0f}", ratio(ws.rps, wl.rps),
                     f"{ws.percentile(50):.2f} / {wl.percentile(50):.2f} ms"])
        if name == "inbox":
            growth = max(l["median"] / s["median"], ws.rps / wl.rps)
            verdicts.append(f"feed page at {large:,} vs {SMALL} messages: {l['median'] / s['median']:.2f}× the "
                            f"time (hyperfine median), {ws.rps / wl.rps:.2f}× (wrk req/s) (target ≤ "
                            f"{TARGET_FEED_GROWTH}×) {verdict(growth <= TARGET_FEED_GROWTH)}")
    out.append(table(["program", f"median, {SMALL}", f"median, {large:,}", "time ratio",
                      f"req/s, {SMALL}", f"req/s, {large:,}", "req/s ratio", "wrk p50"], rows))
    return out


def anatomy_table(anatomy_rows):
    """The per-request table's lines: faults, CPU time and system calls, ours beside C."""
    out = ["", "**Per request, inside the process** (the program run directly; page faults and CPU time "
           "averaged from wait4's rusage, system calls counted by `strace -f -c` once, `–` without strace):", ""]
    rows = []
    for label, swift, c in anatomy_rows:
        def calls(r):
            return str(r["syscalls"]) if r["syscalls"] is not None else "–"
        rows.append([label, f"{swift['faults']:.0f} / {c['faults']:.0f}", f"{swift['cpu'] * 1000:.2f} / {c['cpu'] * 1000:.2f} ms",
                     f"{calls(swift)} / {calls(c)}"])
    out.append(table(["request", "page faults, ours / C", "CPU time, ours / C", "system calls, ours / C"], rows))
    return out


if __name__ == "__main__":
    main()
