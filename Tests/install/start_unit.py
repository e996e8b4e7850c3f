"""Starts fcgiwrap in ROOT as systemd would from the installed unit files:
ROOT/lib/systemd/system/fcgiwrap.socket and fcgiwrap.service with the
drop-ins in fcgiwrap.service.d/ (the package's among them), read here, not
restated. Usage: start_unit.py ROOT (run as root; it becomes fcgiwrap).

What is read and done, as systemd does it:
  - the socket: ListenStream (a path), SocketUser, SocketGroup, SocketMode;
    bound, owned and moded so, and handed over as fd 3 with LISTEN_FDS=1
    and LISTEN_PID (this process's id, which the execs below keep);
  - the service: Environment= and EnvironmentFile= (a leading `-`: optional),
    ExecStart= (an empty one resets the list, as a drop-in does), User= and
    Group=, with drop-ins applied in name order after the unit;
  - ExecStart's `${VAR}` becomes one word, `$VAR` the words of its value;
  - a clean environment (what the unit sets, PATH, LISTEN_*), as the user.
Anything else in these sections (a setting this script does not know) is an
error: the test must not pass on a unit it misread.
"""
import os
import re
import shlex
import socket
import sys

ROOT = sys.argv[1]
UNITS = "/lib/systemd/system"
SERVICE_KEYS = {"Environment", "EnvironmentFile", "ExecStart", "User", "Group"}
SOCKET_KEYS = {"ListenStream", "SocketMode", "SocketUser", "SocketGroup"}


def sections(path):
    """[(section, key, value)] of a unit file, in order."""
    out, section = [], None
    for raw in open(os.path.join(ROOT, path.lstrip("/")), encoding="utf-8"):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, _, value = line.partition("=")
        out.append((section, key.strip(), value.strip()))
    return out


def service_entries():
    entries = sections(UNITS + "/fcgiwrap.service")
    for base in (UNITS, "/etc/systemd/system"):
        folder = os.path.join(ROOT, base.lstrip("/"), "fcgiwrap.service.d")
        if os.path.isdir(folder):
            for name in sorted(os.listdir(folder)):
                if name.endswith(".conf"):
                    entries += sections(base + "/fcgiwrap.service.d/" + name)
    return [(k, v) for s, k, v in entries if s == "Service"]


def expand(command, environment):
    words = []
    for word in shlex.split(command):
        whole = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", word)
        if whole:  # $VAR: split into words
            words += environment.get(whole.group(1), "").split()
            continue
        words.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: environment.get(m.group(1), ""), word))
    return words


environment, exec_start, user, group = {}, [], "root", None
for key, value in service_entries():
    if key not in SERVICE_KEYS:
        sys.exit("start_unit.py: fcgiwrap.service sets %s, which this test does not know how to apply" % key)
    if key == "Environment":
        for assignment in shlex.split(value):
            name, _, text = assignment.partition("=")
            environment[name] = text
    elif key == "EnvironmentFile":
        optional = value.startswith("-")
        path = os.path.join(ROOT, value.lstrip("-").lstrip("/"))
        if not os.path.exists(path):
            if optional:
                continue
            sys.exit("start_unit.py: EnvironmentFile %s is missing" % value)
        for line in open(path, encoding="utf-8"):
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                name, _, text = line.partition("=")
                environment[name.strip()] = " ".join(shlex.split(text))
    elif key == "ExecStart":
        exec_start = [] if value == "" else exec_start + [value]
    elif key == "User":
        user = value
    elif key == "Group":
        group = value
if len(exec_start) != 1:
    sys.exit("start_unit.py: fcgiwrap.service has %d ExecStart lines after its drop-ins" % len(exec_start))
argv = expand(exec_start[0], environment)

listen = {k: v for s, k, v in sections(UNITS + "/fcgiwrap.socket") if s == "Socket"}
unknown = set(listen) - SOCKET_KEYS
if unknown:
    sys.exit("start_unit.py: fcgiwrap.socket sets %s, which this test does not know how to apply" % ", ".join(unknown))
path = os.path.join(ROOT, listen["ListenStream"].lstrip("/"))


def ids(name):
    """The ids of the names in ROOT's /etc/passwd or /etc/group."""
    return {line.split(":")[0]: int(line.split(":")[2]) for line in open(os.path.join(ROOT, "etc", name), encoding="utf-8")}


uid = ids("passwd")[listen.get("SocketUser", "root")]
gid = ids("group")[listen.get("SocketGroup", "root")]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chown(path, uid, gid)
os.chmod(path, int(listen.get("SocketMode", "0666"), 8))
s.listen(128)
os.dup2(s.fileno(), 3)
# When the socket already is fd 3, dup2 leaves its close-on-exec flag set.
os.set_inheritable(3, True)
print("start_unit.py: %s as %s:%s on %s" % (" ".join(argv), user, group or user, listen["ListenStream"]), flush=True)

clean = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LISTEN_FDS=1",
         "LISTEN_PID=%d" % os.getpid(), "LISTEN_FDNAMES=fcgiwrap.socket"]
clean += ["%s=%s" % item for item in sorted(environment.items())]
os.execvp("chroot", ["chroot", ROOT, "setpriv", "--reuid=" + user, "--regid=" + (group or user), "--init-groups",
                     "--inh-caps=-all", "--", "env", "-i"] + clean + argv)
