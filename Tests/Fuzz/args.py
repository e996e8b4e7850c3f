#!/usr/bin/env python3
"""Argument lists thrown at the two command-line tools, mockcloud-sync and
mockcloud-admin, run as the real programs.

    Tests/Fuzz/args.py [seconds]       default 10; Tests/Fuzz/run.sh passes its own

Each run is a random list (words of both tools, their options, empty
strings, `--`, `-h`, random bytes) or a mutation of a command line the
README and the tests use (a word dropped, doubled, moved, emptied, replaced,
glued to the one before with `=`, or split off it). The oracle: the program
exits by itself (no signal, no trap, within 10 s) with a status it
documents (mockcloud-admin: 0, 1 or 2; mockcloud-sync: 0 to 7) and says
something; a status 2 is a sentence naming the program (mockcloud-sync's,
always a wrong command line, then the usage too).

Nothing can reach the network or the machine: every run is in a fresh
sandbox folder (its working directory and HOME), the CA file it may name is
not a certificate (so mockcloud-sync stops at exit 3 before connecting),
and mockcloud-admin's scripts (tls, doctor, backup, restore) are stubs that
print their arguments. First every reproducer in Tests/Fuzz/regressions/args/
is replayed (JSON: {"tool": "sync"|"admin", "arguments": [...]}); a failure
is written to .build/fuzz/artifacts/args/. Prints one line per tool, then
`N passed, M failed` last.
"""
import base64
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TOOLS = {
    "sync": os.environ.get("MOCKCLOUD_SYNC_BIN") or os.path.join(REPO, ".build", "release", "mockcloud-sync"),
    "admin": os.path.join(os.environ.get("MOCKCLOUD_CGI_BIN") or os.path.join(REPO, "cgi-bin"), "mockcloud-admin"),
}
STATUSES = {"sync": set(range(0, 8)), "admin": {0, 1, 2}}
NAMES = {"sync": "mockcloud-sync", "admin": "mockcloud-admin"}
BOX = ["--url", "https://127.0.0.1:1", "--ca", "ca.crt", "--user-key", "u1"]
SEEDS = {
    "sync": [
        ["push", "scans"] + BOX + ["--device-id", "mirror-1"],
        ["push", "scans", "--delete"] + BOX + ["--json"],
        ["push", "scans", "--watch", "--delete"] + BOX,
        ["pull", "inbox", "--exclude-own"] + BOX,
        ["settings", "get"] + BOX + ["--json", "--token-file", "token"],
        ["settings", "put", "s.json", "--if-match", '"abc"'] + BOX,
        ["settings", "patch", "s.json"] + BOX + ["--ca-sha256", "AB:CD"],
        ["--url=https://127.0.0.1:1", "--ca=ca.crt", "--user-key=u1", "pull", "inbox"],
        ["--help"],
    ],
    "admin": [
        ["verify", "data", "--keys", "keys"],
        ["sign", "--keys", "keys", "data"],
        ["rotate", "data", "--keys=keys", "--require"],
        ["token", "tokens", "phone", "--keys", "u1,u2"],
        ["token", "tokens"],
        ["tls", "--dir", "tls", "ensure", "box.local", "10.0.0.2"],
        ["tls", "show", "phone.crt"],
        ["doctor", "--url", "https://127.0.0.1:1"],
        ["backup", "data", "b.tar"],
        ["restore", "b.tar", "data2"],
        ["settings"],
        ["--help"],
    ],
}
WORDS = sorted({w for seeds in SEEDS.values() for seed in seeds for w in seed} | {
    "", "-", "--", "-h", "--help", "=", "--=", "--url=", "--token", "--token=x", "--delete=1", "-x", "--frob",
    "tls", "renew", "nofile", "/", ".", "ca.crt", "keys", "..", "é", "\u00e9\u0301", "a b", "--keys,", "push", "get",
})


def sandbox():
    """A fresh folder with what the seeds name; returns (path, env)."""
    path = tempfile.mkdtemp(prefix="mcargs.")
    os.makedirs(os.path.join(path, "scans"))
    os.makedirs(os.path.join(path, "data"))
    os.makedirs(os.path.join(path, "scripts"))
    with open(os.path.join(path, "scans", "a.json"), "w") as f:
        f.write('{"syncVersion": 1}')
    with open(os.path.join(path, "s.json"), "w") as f:
        f.write("{}")
    with open(os.path.join(path, "ca.crt"), "w") as f:
        f.write("not a certificate\n")
    for name, text in (("keys", "k1:" + base64.b64encode(b"k" * 32).decode() + "\n"), ("token", "mct_fuzz\n")):
        fd = os.open(os.path.join(path, name), os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
    for script in ("tls.sh", "doctor.sh", "backup.sh"):
        stub = os.path.join(path, "scripts", script)
        with open(stub, "w") as f:
            f.write('#!/bin/sh\necho "%s $*"\n' % script)
        os.chmod(stub, 0o755)
    env = {"PATH": "/usr/bin:/bin", "HOME": path, "LC_ALL": "C.UTF-8",
           "MOCKCLOUD_ADMIN_SCRIPTS": os.path.join(path, "scripts")}
    return path, env


def random_word(rng):
    roll = rng.random()
    if roll < 0.7:
        return rng.choice(WORDS)
    if roll < 0.85:
        return "--" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz-=") for _ in range(rng.randint(0, 12)))
    # Any bytes but NUL (which no argument can hold), as the tool receives them.
    raw = bytes(rng.randint(1, 255) for _ in range(rng.randint(0, 40)))
    return os.fsdecode(raw)


def mutate(rng, words):
    words = list(words)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(9)
        i = rng.randrange(len(words) + 1)
        if op == 0 and words:
            del words[min(i, len(words) - 1)]
        elif op == 1 and words:
            words.insert(i, words[min(i, len(words) - 1)])
        elif op == 2 and len(words) > 1:
            j, k = rng.randrange(len(words)), rng.randrange(len(words))
            words[j], words[k] = words[k], words[j]
        elif op == 3 and words:
            words[min(i, len(words) - 1)] = ""
        elif op == 4 and words:
            words[min(i, len(words) - 1)] = random_word(rng)
        elif op == 5 and 0 < i < len(words):
            words[i - 1:i + 1] = [words[i - 1] + "=" + words[i]]
        elif op == 6 and words and "=" in words[min(i, len(words) - 1)]:
            j = min(i, len(words) - 1)
            words[j:j + 1] = words[j].split("=", 1)
        elif op == 7:
            words = words[:i]
        else:
            words.insert(i, random_word(rng))
    return words


def run(tool, arguments):
    """None when the run passes the oracle, else why not."""
    path, env = sandbox()
    try:
        proc = subprocess.run([TOOLS[tool]] + [os.fsencode(a) for a in arguments], cwd=path, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
    except subprocess.TimeoutExpired:
        return "no exit within 10 s", None
    finally:
        shutil.rmtree(path, ignore_errors=True)
    status, out, err = proc.returncode, proc.stdout, proc.stderr
    if status < 0:
        return f"killed by signal {-status}", status
    if status not in STATUSES[tool]:
        return f"exit {status}, not one it documents", status
    if not (out.strip() or err.strip()):
        return f"exit {status} without a word", status
    if status == 2:
        # mockcloud-sync's 2 is a wrong command line; mockcloud-admin's also
        # a command that cannot start (no keys, a script not found).
        lines = err.decode(errors="replace").splitlines()
        usage = any(line.startswith("usage: ") for line in lines)
        if not lines or not lines[0].startswith(NAMES[tool] + ": ") or (tool == "sync" and not usage):
            return "exit 2 without its sentence" + (" and the usage" if tool == "sync" else "") + ": " \
                + err.decode(errors="replace")[:200], status
    return None, status


def report(tool, arguments, why):
    folder = os.path.join(REPO, ".build", "fuzz", "artifacts", "args")
    os.makedirs(folder, exist_ok=True)
    name = os.path.join(folder, f"{tool}-{abs(hash(tuple(arguments))) % 10**10}.json")
    with open(name, "w") as f:
        json.dump({"tool": tool, "arguments": arguments, "why": why}, f)
    print(f"FAILED {NAMES[tool]} {json.dumps(arguments)}: {why} (kept in {name})")


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    passed = failed = 0
    missing = [path for path in TOOLS.values() if not os.access(path, os.X_OK)]
    if missing:
        print(f"fuzz args: not built: {', '.join(missing)} (make install)")
        print("0 passed, 1 failed")
        return 1

    regressions = os.path.join(HERE, "regressions", "args")
    for name in sorted(os.listdir(regressions)) if os.path.isdir(regressions) else []:
        with open(os.path.join(regressions, name)) as f:
            case = json.load(f)
        why, _ = run(case["tool"], case["arguments"])
        if why:
            failed += 1
            print(f"REGRESSION args: {name} fails again: {why}")
        else:
            passed += 1

    rng = random.Random(os.environ.get("FUZZ_ARGS_SEED") or time.time_ns())
    for tool in ("sync", "admin"):
        deadline = time.monotonic() + seconds / 2
        runs, statuses, failures = 0, {}, 0
        while time.monotonic() < deadline or runs == 0:
            if rng.random() < 0.25:
                arguments = [random_word(rng) for _ in range(rng.randint(0, 8))]
            else:
                arguments = mutate(rng, rng.choice(SEEDS[tool]))
            why, status = run(tool, arguments)
            runs += 1
            statuses[status] = statuses.get(status, 0) + 1
            if why:
                failures += 1
                if failures <= 5:
                    report(tool, arguments, why)
        spread = ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)))
        if failures:
            failed += 1
            print(f"fuzz args-{tool:<7} FAILED  {failures} of {runs} runs; exit statuses {spread}")
        else:
            passed += 1
            print(f"fuzz args-{tool:<7} ok      {runs} runs in {seconds / 2:.0f}s; exit statuses {spread}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
