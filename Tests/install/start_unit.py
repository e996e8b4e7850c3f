"""Starts a service in ROOT as systemd would from its installed unit files
(ROOT/lib/systemd/system, drop-ins from there and /etc/systemd/system), read
here, not restated. Run as root; this process becomes the service (its PID).

  start_unit.py ROOT
      fcgiwrap: fcgiwrap.socket and fcgiwrap.service with the drop-ins in
      fcgiwrap.service.d/ (the package's among them).
  start_unit.py ROOT TEMPLATE@.service INSTANCE
      an instance of a template, e.g. mockcloud-sync-push@.service
      srv-mirror-scans (the name `systemd-escape --path` gives a folder),
      or mockcloud-fastcgi@.service inbox, with its socket
      (mockcloud-fastcgi@.socket) when the template has one.

What is read and done, as systemd does it:
  - the socket (fcgiwrap's, or the template's): ListenStream (a path, its
    folder made as systemd makes it), SocketUser, SocketGroup,
    SocketMode; bound, owned and moded so, and handed over as fd 3 with
    LISTEN_FDS=1 and LISTEN_PID (this process's id, which the execs keep);
  - the service: Environment= and EnvironmentFile= (a leading `-`: optional),
    ExecStart= (an empty one resets the list, as a drop-in does), User=,
    Group=, UMask=, LimitNOFILE= (SOFT[:HARD], a number or infinity), with
    drop-ins applied in file-name order after the unit;
  - the specifiers %i (the instance), %I (unescaped), %f (unescaped, with a
    leading /) and %%; any other specifier is an error;
  - ExecStart's `${VAR}` becomes one word, `$VAR` the words of its value;
  - a clean environment (what the unit sets, PATH, USER, LOGNAME, HOME and
    SHELL of the user, LISTEN_*), as the user and group.
The settings in SYSTEMD_ONLY are accepted and not applied: they need systemd
itself. Anything else in these sections (a setting this script does not
know) is an error: the test must not pass on a unit it misread.
"""
import os
import re
import resource
import shlex
import socket
import sys

UNITS = "/lib/systemd/system"
DROP_IN_BASES = (UNITS, "/etc/systemd/system")  # lowest priority first
SERVICE_KEYS = {"Environment", "EnvironmentFile", "ExecStart", "User", "Group", "UMask", "LimitNOFILE"}
# The resource limits the service sets ({resource: (soft, hard)}), applied
# to this process before it becomes the service (exec keeps them).
LIMITS = {}
# Applied by systemd, not here: the sandbox of mockcloud-sync-push@.service
# (its system calls are held to SystemCallFilter= by Tests/client/watch.py,
# under strace) and what systemd does when the process ends.
SYSTEMD_ONLY = {
    "Type", "Restart", "RestartSec", "RestartPreventExitStatus", "KillMode",
    "ReadWritePaths", "ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices", "PrivateMounts",
    "ProtectProc", "RemoveIPC", "NoNewPrivileges", "CapabilityBoundingSet", "RestrictAddressFamilies",
    "RestrictNamespaces", "RestrictRealtime", "RestrictSUIDSGID", "LockPersonality", "MemoryDenyWriteExecute",
    "ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ProtectClock",
    "ProtectHostname", "SystemCallArchitectures", "SystemCallFilter",
}
SOCKET_KEYS = {"ListenStream", "SocketMode", "SocketUser", "SocketGroup"}


def fail(message):
    sys.exit("start_unit.py: " + message)


def in_root(path):
    return os.path.join(ROOT, path.lstrip("/"))


def sections(path):
    """[(section, key, value)] of a unit file, in order."""
    out, section = [], None
    for raw in open(in_root(path), encoding="utf-8"):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, _, value = line.partition("=")
        out.append((section, key.strip(), value.strip()))
    return out


def unescape(instance):
    """What systemd-escape escaped: `-` is `/`, `\\xNN` a byte."""
    return re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), instance.replace("-", "/"))


def specifiers(value, unit, instance):
    known = {"i": instance, "I": unescape(instance), "f": "/" + unescape(instance), "%": "%"}

    def one(match):
        if match.group(1) not in known:
            fail("%s uses the specifier %%%s, which this test does not know how to apply" % (unit, match.group(1)))
        return known[match.group(1)]
    return re.sub(r"%(.)", one, value)


def service_entries(template, instance):
    """(key, value) of the unit's [Service], its drop-ins' after it, in
    file-name order (a file in /etc hides one of the same name in /lib)."""
    unit = template.replace("@.", "@%s." % instance) if instance else template
    entries = sections(UNITS + "/" + template)
    drop_ins = {}
    for base in DROP_IN_BASES:
        for name in dict.fromkeys((template, unit)):
            folder = "%s/%s.d" % (base, name)
            if os.path.isdir(in_root(folder)):
                drop_ins.update({f: folder + "/" + f for f in os.listdir(in_root(folder)) if f.endswith(".conf")})
    for name in sorted(drop_ins):
        entries += sections(drop_ins[name])
    return unit, [(k, specifiers(v, unit, instance)) for s, k, v in entries if s == "Service"]


def expand(command, environment):
    words = []
    for word in shlex.split(command):
        whole = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", word)
        if whole:  # $VAR: split into words
            words += environment.get(whole.group(1), "").split()
            continue
        words.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: environment.get(m.group(1), ""), word))
    return words


def service(template, instance):
    """The unit's command line, environment, user, group and umask."""
    unit, entries = service_entries(template, instance)
    environment, exec_start, user, group, umask = {}, [], "root", None, 0o022
    for key, value in entries:
        if key in SYSTEMD_ONLY:
            continue
        if key not in SERVICE_KEYS:
            fail("%s sets %s, which this test does not know how to apply" % (unit, key))
        if key == "Environment":
            for assignment in shlex.split(value):
                name, _, text = assignment.partition("=")
                environment[name] = text
        elif key == "EnvironmentFile":
            optional = value.startswith("-")
            path = in_root(value.lstrip("-"))
            if not os.path.exists(path):
                if optional:
                    continue
                fail("EnvironmentFile %s is missing" % value)
            for line in open(path, encoding="utf-8"):
                line = line.strip()
                if line and line[0] not in "#;" and "=" in line:
                    name, _, text = line.partition("=")
                    environment[name.strip()] = " ".join(shlex.split(text))
        elif key == "ExecStart":
            exec_start = [] if value == "" else exec_start + [value]
        elif key == "User":
            user = value
        elif key == "Group":
            group = value
        elif key == "UMask":
            umask = int(value, 8)
        elif key == "LimitNOFILE":
            def number(text):
                return resource.RLIM_INFINITY if text == "infinity" else int(text)
            soft, _, hard = value.partition(":")
            LIMITS[resource.RLIMIT_NOFILE] = (number(soft), number(hard or soft))
    if len(exec_start) != 1:
        fail("%s has %d ExecStart lines after its drop-ins" % (unit, len(exec_start)))
    return expand(exec_start[0], environment), environment, user, group or user, umask


def table(name):
    """ROOT's /etc/passwd or /etc/group: {name: fields}."""
    return {line.split(":")[0]: line.rstrip("\n").split(":") for line in open(in_root("/etc/" + name), encoding="utf-8")}


def listen(unit, instance=""):
    """The socket `unit` (an instance of it, for a template) bound as
    systemd binds it, as fd 3: its LISTEN_* and where it listens."""
    name = unit.replace("@.", "@%s." % instance) if instance else unit
    listen = {k: specifiers(v, name, instance) for s, k, v in sections(UNITS + "/" + unit) if s == "Socket"}
    unknown = set(listen) - SOCKET_KEYS
    if unknown:
        fail("%s sets %s, which this test does not know how to apply" % (name, ", ".join(unknown)))
    path = in_root(listen["ListenStream"])
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    os.chown(path, int(table("passwd")[listen.get("SocketUser", "root")][2]),
             int(table("group")[listen.get("SocketGroup", "root")][2]))
    os.chmod(path, int(listen.get("SocketMode", "0666"), 8))
    s.listen(128)
    # Detached: the socket object going away must not close the fd, which
    # may be 3 itself; and when it is, dup2 leaves its close-on-exec flag set.
    os.dup2(s.detach(), 3)
    os.set_inheritable(3, True)
    return ["LISTEN_FDS=1", "LISTEN_PID=%d" % os.getpid(), "LISTEN_FDNAMES=" + name], " on " + listen["ListenStream"]


ROOT = sys.argv[1]
if len(sys.argv) == 2:
    argv, environment, user, group, umask = service("fcgiwrap.service", "")
    listening, where = listen("fcgiwrap.socket")
elif len(sys.argv) == 4 and sys.argv[2].endswith("@.service"):
    argv, environment, user, group, umask = service(sys.argv[2], sys.argv[3])
    socket_unit = sys.argv[2][:-len("service")] + "socket"
    listening, where = [], ""
    if os.path.exists(in_root(UNITS + "/" + socket_unit)):
        listening, where = listen(socket_unit, sys.argv[3])
else:
    fail("usage: start_unit.py ROOT [TEMPLATE@.service INSTANCE]")
print("start_unit.py: %s as %s:%s%s" % (" ".join(argv), user, group, where), flush=True)

account = table("passwd")[user]
clean = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
         "USER=" + user, "LOGNAME=" + user, "HOME=" + account[5], "SHELL=" + account[6]] + listening
clean += ["%s=%s" % item for item in sorted(environment.items())]
os.umask(umask)
for limit, (soft, hard) in LIMITS.items():
    try:
        resource.setrlimit(limit, (soft, hard))
    except (ValueError, OSError):
        # A sandbox that keeps even root below it: as high as it allows
        # (systemd, PID 1 on the box, sets the unit's own).
        _, allowed = resource.getrlimit(limit)
        print("start_unit.py: the limit %d:%d lowered to %d, the most this machine allows" % (soft, hard, allowed), flush=True)
        resource.setrlimit(limit, (allowed, allowed))
os.execvp("chroot", ["chroot", ROOT, "setpriv", "--reuid=" + user, "--regid=" + group, "--init-groups",
                     "--inh-caps=-all", "--", "env", "-i"] + clean + argv)
