"""What the stress scripts share: raw TLS exchanges and a checker that
proves a data directory is whole. Stacks, the programs run as fcgiwrap runs
them and the change-log format come from the harness in Tests/support/
(stack.sh, cgi_program.py, formats.py).

Python 3 standard library only. Nothing here reads any path outside the
repository and the directories the caller names.
"""
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "Tests", "support"))
import formats  # noqa: E402
import cgi_program  # noqa: E402
import suite  # noqa: E402
DEFAULT_CGI_BIN = os.environ.get("MOCKCLOUD_CGI_BIN") or os.path.join(REPO, "cgi-bin")

# Clients may send numbers of any length; the checks must read them back.
if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(0)

# ---------------------------------------------------------------- TLS

TLS = suite.TLS


def host_port(base):
    url = urllib.parse.urlsplit(base)
    return url.hostname, url.port


class Response:
    def __init__(self, status, headers, body, version="HTTP/1.1"):
        self.status = status
        self.headers = headers          # list of (lowercased name, value)
        self.body = body
        self.version = version

    def header(self, name):
        for key, value in self.headers:
            if key == name.lower():
                return value
        return None

    def json(self):
        return json.loads(self.body)


def parse_responses(data, head_request=False):
    """Splits the bytes a server sent on one connection into responses.
    Returns (responses, leftover bytes that are not a whole response)."""
    responses = []
    while data:
        if not data.startswith(b"HTTP/"):
            # HTTP/0.9: a body with no status line and no headers.
            responses.append(Response(None, [], data, version="HTTP/0.9"))
            return responses, b""
        end = data.find(b"\r\n\r\n")
        if end < 0:
            return responses, data
        head = data[:end].decode("latin-1").split("\r\n")
        rest = data[end + 4:]
        parts = head[0].split(" ", 2)
        try:
            status = int(parts[1])
        except (IndexError, ValueError):
            return responses, data
        headers = []
        for line in head[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers.append((name.strip().lower(), value.strip()))
        response = Response(status, headers, b"", version=parts[0])
        names = dict(headers)
        if head_request or status in (204, 304) or 100 <= status < 200:
            body, rest = b"", rest
        elif "content-length" in names:
            length = int(names["content-length"])
            if len(rest) < length:
                return responses, data
            body, rest = rest[:length], rest[length:]
        elif "chunked" in names.get("transfer-encoding", "").lower():
            body = b""
            while True:
                line_end = rest.find(b"\r\n")
                if line_end < 0:
                    return responses, data
                size = int(rest[:line_end].split(b";")[0], 16)
                rest = rest[line_end + 2:]
                if size == 0:
                    trailer_end = rest.find(b"\r\n")
                    rest = rest[trailer_end + 2:] if trailer_end >= 0 else b""
                    break
                body += rest[:size]
                rest = rest[size + 2:]
        else:
            body, rest = rest, b""
        response.body = body
        responses.append(response)
        head_request = False        # only the first request of a pipeline is known
        data = rest
    return responses, b""


def exchange(base, parts, read_timeout=10.0, total_timeout=15.0, head_request=False, plain=False):
    """Sends `parts` over one new TLS connection (a part is bytes, or a
    float: seconds to wait before the next part), then reads until the server
    closes or `read_timeout` passes without a byte. Returns
    (responses, leftover, error text or None, seconds)."""
    host, port = host_port(base)
    started = time.monotonic()
    error = None
    received = b""
    sock = None
    try:
        raw = socket.create_connection((host, port), timeout=read_timeout)
        sock = raw if plain else TLS.wrap_socket(raw)
        try:
            for part in parts:
                if isinstance(part, float):
                    time.sleep(part)
                elif part:
                    sock.sendall(part)
        except (OSError, ssl.SSLError) as exc:
            # nginx may answer (413, 400) and close before taking every byte.
            error = "send: %s" % type(exc).__name__
        sock.settimeout(read_timeout)
        while time.monotonic() - started < total_timeout:
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                error = (error + "; " if error else "") + "read timeout"
                break
            except (OSError, ssl.SSLError) as exc:
                error = (error + "; " if error else "") + "read: %s" % type(exc).__name__
                break
            if not chunk:
                break
            received += chunk
    except (OSError, ssl.SSLError) as exc:
        error = "connect: %s %s" % (type(exc).__name__, exc)
    finally:
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass
    responses, leftover = parse_responses(received, head_request)
    return responses, leftover, error, time.monotonic() - started


def request(base, method, path, headers=None, body=None, timeout=30.0):
    """One well-formed request (Connection: close) over raw TLS."""
    host, port = host_port(base)
    head = ["%s %s HTTP/1.1" % (method, path), "Host: %s:%d" % (host, port), "Connection: close"]
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    for name, value in (headers or {}).items():
        head.append("%s: %s" % (name, value))
    if data is not None:
        head.append("Content-Length: %d" % len(data))
    payload = ("\r\n".join(head) + "\r\n\r\n").encode("utf-8") + (data or b"")
    responses, _, error, _ = exchange(base, [payload], read_timeout=timeout, total_timeout=timeout,
                                      head_request=(method == "HEAD"))
    if not responses:
        raise ConnectionError("%s %s: no answer (%s)" % (method, path, error))
    return responses[0]


# ---------------------------------------------------------------- programs

def run_killed(program, env, body, kill_after=None):
    """Runs a program as fcgiwrap does (body on stdin) and, with `kill_after`
    seconds, SIGKILLs it then if it is still running. Returns (stdout,
    stderr, exit status (-SIGKILL when killed), seconds from start to exit)."""
    proc = subprocess.Popen([program], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    started = time.monotonic()
    try:
        proc.stdin.write(body)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    proc.stdin = None           # communicate() must not touch it again
    if kill_after is not None:
        remaining = kill_after - (time.monotonic() - started)
        if remaining > 0:
            time.sleep(remaining)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    return out, err, proc.returncode, time.monotonic() - started


# ---------------------------------------------------------------- Python layout


class _Object(list):
    """A JSON object as its (key, value) pairs, in order, duplicates kept."""


class _Number(str):
    """A JSON number as its literal text."""


def parse_preserving(text):
    """Parses JSON keeping member order, duplicate keys and number text."""
    return json.loads(text, object_pairs_hook=_Object, parse_float=_Number,
                      parse_int=_Number, parse_constant=_Number)


def python_layout(value, level=0):
    """The bytes Python's json.dumps(value, indent=2) writes, numbers as given."""
    pad = "  " * (level + 1)
    end = "  " * level
    if isinstance(value, _Object):
        if not value:
            return "{}"
        items = ["%s%s: %s" % (pad, json.dumps(k), python_layout(v, level + 1)) for k, v in value]
        return "{\n" + ",\n".join(items) + "\n" + end + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(pad + python_layout(v, level + 1) for v in value) + "\n" + end + "]"
    if isinstance(value, _Number):
        return str(value)
    return json.dumps(value)


def settings_file_problem(raw):
    """None when `raw` is a whole settings file in the Python layout."""
    try:
        text = raw.decode("utf-8")
        value = parse_preserving(text)
    except (UnicodeDecodeError, ValueError) as exc:
        return "not JSON (%s); %d bytes, starts %r" % (exc, len(raw), raw[:60])
    if not isinstance(value, _Object):
        return "JSON but not an object"
    if python_layout(value) != text:
        return "not in the Python layout (json.dumps(doc, indent=2))"
    return None


# ---------------------------------------------------------------- data directory

KEY = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
MESSAGE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")
TEMPORARY = re.compile(r"^\.~(.+)$")
def read_log(path):
    """(header ok, [(seq, kind, live, id)], torn tail records, problems)."""
    header, decoded, partial = formats.read_log(open(path, "rb").read())
    problems = []
    if header is None:
        return False, [], 0, ["%s: no valid header record" % path]
    # What a crash may leave: a partial record, or records that do not decode,
    # at the very end only (the next writer cuts them off).
    torn = 0
    while decoded and decoded[-1] is None:
        decoded.pop()
        torn += 1
    if partial:
        torn += 1
    if None in decoded:
        problems.append("%s: a damaged record before the end (record %d)" % (path, decoded.index(None) + 1))
    records = [r for r in decoded if r is not None]
    for before, after in zip(records, records[1:]):
        if after[0] <= before[0]:
            problems.append("%s: seq %d after %d: the log is not sorted" % (path, after[0], before[0]))
            break
    return True, records, torn, problems


def envelope_problem(raw, ident):
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        return "not JSON (%s)" % exc
    if not isinstance(doc, dict):
        return "not an object"
    if doc.get("id") != ident:
        return "id %r, expected %r" % (doc.get("id"), ident)
    if not isinstance(doc.get("version"), int) or not isinstance(doc.get("seq"), int):
        return "version/seq not integers"
    if not (doc.get("source") is None or isinstance(doc.get("source"), str)):
        return "source neither null nor a string"
    if not isinstance(doc.get("serverReceivedAt"), str):
        return "no serverReceivedAt"
    if not (isinstance(doc.get("body"), dict) or doc.get("deleted") is True):
        return "neither a body object nor a tombstone"
    return None


class DataReport:
    def __init__(self):
        self.problems = []
        self.settings_files = 0
        self.messages = 0
        self.logs = 0
        self.log_records = 0
        self.sidecars = 0
        self.temporary = []         # leftover temporary files (paths)
        self.torn_tails = 0         # torn records at the end of logs
        self.orphan_records = 0     # records whose change never reached the message file
        self.stale_tombstones = 0   # tombstone files whose record compaction dropped
        self.live = {}              # (key, id) -> envelope of every live message
        self.tombstones = {}        # (key, id) -> envelope
        self.settings = {}          # key -> parsed document (dict)

    @property
    def files_checked(self):
        return self.settings_files + self.messages + self.logs + self.sidecars


def check_data_dir(data, allow_torn=False, allow_temporary=False):
    """Walks a data directory and proves it whole: only the files the layout
    names (docs/OPERATIONS.md, "Data layout"); settings files whole JSON objects in the
    Python layout; change logs of whole 256-byte records, sorted, with a torn
    tail only where a crash may leave one (`allow_torn`); envelopes that parse
    and name their own id; every live message's seq in its key's log."""
    report = DataReport()
    for directory, dirs, files in os.walk(data):
        rel = os.path.relpath(directory, data)
        parts = [] if rel == "." else rel.split(os.sep)
        for name in files:
            check_layout_file(report, os.path.join(directory, name), parts, name, allow_temporary)
        for name in dirs:
            sub = parts + [name]
            allowed = (sub in ([".locks"], ["user_settings"], ["inbox"])
                       or (len(sub) == 2 and sub[0] == "inbox" and KEY.match(sub[1]))
                       or (len(sub) == 3 and sub[0] == "inbox" and KEY.match(sub[1]) and sub[2] == "messages"))
            if not allowed:
                report.problems.append("%s: a directory the data layout does not name" % os.path.join(directory, name))
    inbox_root = os.path.join(data, "inbox")
    for key in sorted(os.listdir(inbox_root)) if os.path.isdir(inbox_root) else []:
        check_log_against_messages(report, inbox_root, key, allow_torn)
    return report


def check_layout_file(report, path, parts, name, allow_temporary):
    """One file of the data directory, at `parts` below it: a file the layout names, whole."""
    problem = report.problems.append
    if os.path.islink(path) or not os.path.isfile(path):
        problem("%s: not a regular file" % path)
    elif TEMPORARY.match(name):
        report.temporary.append(path)
        if not allow_temporary:
            problem("%s: a temporary file was left behind" % path)
    elif parts == [".locks"]:
        lock = re.match(r"^(user_settings|inbox)\.(.+)\.lock$", name)
        # A waiting request's place (Sources/MockCloudStore/DataDirectory.swift).
        if not re.match(r"^waiting\.(0|[1-9][0-9]?)\.lock$", name) and not (lock and KEY.match(lock.group(2))):
            problem("%s: not a lock file of a valid key" % path)
    elif parts == ["user_settings"]:
        if name.endswith(".json.mac") and KEY.match(name[:-9]):
            report.sidecars += 1
        elif name.endswith(".json") and KEY.match(name[:-5]):
            report.settings_files += 1
            raw = open(path, "rb").read()
            why = settings_file_problem(raw)
            if why:
                problem("%s: %s" % (path, why))
            else:
                report.settings[name[:-5]] = json.loads(raw)
        else:
            problem("%s: not a settings file of a valid key" % path)
    elif len(parts) == 2 and parts[0] == "inbox" and KEY.match(parts[1]) and name == "changes.log":
        report.logs += 1
    elif len(parts) == 3 and parts[0] == "inbox" and KEY.match(parts[1]) and parts[2] == "messages":
        check_message_file(report, path, parts[1], name)
    else:
        problem("%s: a file the data layout does not name" % path)


def check_message_file(report, path, key, name):
    """A file of a key's messages folder: a MAC sidecar, or an envelope that parses and names its id."""
    if name.endswith(".json.mac") and MESSAGE_ID.match(name[:-9]):
        report.sidecars += 1
    elif name.endswith(".json") and MESSAGE_ID.match(name[:-5]):
        report.messages += 1
        raw = open(path, "rb").read()
        why = envelope_problem(raw, name[:-5])
        if why:
            report.problems.append("%s: %s" % (path, why))
            return
        doc = json.loads(raw)
        target = report.tombstones if doc.get("deleted") is True else report.live
        target[(key, name[:-5])] = doc
    else:
        report.problems.append("%s: not a message file of a valid id" % path)


def check_log_against_messages(report, inbox_root, key, allow_torn):
    """The key's change log whole, and every message in it: the feed finds a message only through its record."""
    problem = report.problems.append
    log_path = os.path.join(inbox_root, key, "changes.log")
    states = {i: d for (k, i), d in list(report.live.items()) + list(report.tombstones.items()) if k == key}
    if not os.path.exists(log_path):
        if states:
            problem("%s: %d messages but no change log" % (key, len(states)))
        return
    ok, records, torn, log_problems = read_log(log_path)
    report.problems.extend(log_problems)
    report.torn_tails += torn
    report.log_records += len(records)
    if torn and not allow_torn:
        problem("%s: %d torn record(s) at the end" % (log_path, torn))
    in_log = {(seq, ident) for seq, _, _, ident in records}
    for ident, doc in states.items():
        if (doc["seq"], ident) in in_log:
            continue
        if doc.get("deleted") is True:
            # Compaction dropped an expired deletion's record and a crash
            # came before its file went: the file only says "absent".
            report.stale_tombstones += 1
        else:
            problem("%s/%s: seq %d is not in the change log: the feed cannot show it" % (key, ident, doc["seq"]))
    for seq, kind, _, ident in records:
        state = states.get(ident)
        if state is None or state["seq"] != seq:
            report.orphan_records += 1


# ---------------------------------------------------------------- snapshots

def snapshot(root, skip=()):
    """{relative path: (size, mtime_ns)} of every file and directory under
    root, skipping the given absolute paths and everything below them."""
    found = {}
    skip = tuple(os.path.abspath(s) for s in skip)

    def skipped(path):
        return any(path == s or path.startswith(s + os.sep) for s in skip)

    if not os.path.isdir(root):
        return found
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not skipped(os.path.join(directory, d))]
        for name in dirs + files:
            path = os.path.join(directory, name)
            if skipped(path):
                continue
            try:
                st = os.lstat(path)
            except OSError:
                continue
            found[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns)
    return found


def read_feed(inbox_program, env_extra, data, key, limit):
    """Every feed page of `key` from no anchor, the program run as fcgiwrap
    runs it; (messages, deleted, problems)."""
    messages, deleted, _, problems = follow_feed(inbox_program, env_extra, data, key, limit)
    return messages, deleted, problems


def follow_feed(inbox_program, env_extra, data, key, limit, anchor=None):
    """Every feed page of `key` after `anchor` (None: from no anchor) until
    hasMore is false; (messages, deleted, last anchor, problems). A page that
    is not a whole 200 (a 410, a 500) ends the walk with a problem."""
    messages, deleted, problems = [], [], []
    for _ in range(10000):
        query = "limit=%d" % limit + ("&anchor=" + anchor if anchor else "")
        status, _, body, whole, _ = cgi_program.run(inbox_program, "GET", "/inbox", data, {"X-User-Key": key},
                                                    query, extra=env_extra)
        if status != 200 or not whole:
            problems.append("feed %s %s: %s %r" % (key, query, status, body[:200]))
            break
        page = json.loads(body)
        messages += page["messages"]
        deleted += page["deleted"]
        anchor = page["anchor"]
        if page["hasMore"] is False:
            break
    else:
        problems.append("feed %s: more than 10000 pages" % key)
    return messages, deleted, anchor, problems


def write_hmac_keys(path, key_id):
    """A MOCKCLOUD_HMAC_KEYS file (mode 0600) holding one fresh 32-byte key."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, ("%s:%s\n" % (key_id, os.urandom(32).hex())).encode())
    os.close(fd)
    return path


def make_temp_dir(prefix, parent="/tmp"):
    # Short: fcgiwrap's socket lives in the run directory (108-byte limit).
    return tempfile.mkdtemp(prefix=prefix, dir=parent)
