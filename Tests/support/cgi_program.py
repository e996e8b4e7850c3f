"""A MockCloud program run the way fcgiwrap runs it: the CGI environment
nginx's snippet (nginx/mockcloud-locations.conf) gives it, the body on
stdin, the answer parsed from stdout. The Python side's one CGI environment
builder: the stress tests, the benchmarks, the fuzz seeds and
check_formats.py use it, and shell scripts through `env` below (the Swift
process tests have their own, in Tests/EndToEndTests/ProgramRunner.swift).

    cgi_program.py env METHOD PATH [--query Q] [--body FILE] [--data DIR]
                   [--header 'Name: value' ...] [NAME=value ...]
        prints the environment as NUL-terminated NAME=value entries, for
        `mapfile -d '' env < <(...)` and then `env -i "${env[@]}" PROGRAM`

The same request can go to a program serving FastCGI (`fastcgi_request`:
the environment as its PARAMS, the body as its STDIN), as nginx sends it
to the FastCGI mode's workers.

Python 3 standard library only.
"""
import argparse
import os
import struct
import subprocess
import sys


def environment(method, path, data=None, headers=None, query="", body=b"", extra=None):
    """The environment fcgiwrap gives a program for this request, with
    nothing else in it. `headers` are HTTP names (X-User-Key); `data` is
    MOCKCLOUD_DATA (left out when None); `extra` is added last and wins."""
    env = {
        "PATH": "/usr/bin:/bin", "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_PROTOCOL": "HTTP/1.1",
        "REQUEST_METHOD": method, "DOCUMENT_URI": path, "SCRIPT_NAME": path,
        "REQUEST_URI": path + ("?" + query if query else ""), "QUERY_STRING": query,
        "CONTENT_LENGTH": str(len(body)) if body else "", "CONTENT_TYPE": "",
        "HTTPS": "on", "REQUEST_SCHEME": "https",
    }
    if data is not None:
        env["MOCKCLOUD_DATA"] = data
    for name, value in (headers or {}).items():
        if name.lower() == "content-type":
            env["CONTENT_TYPE"] = value
        else:
            env["HTTP_" + name.upper().replace("-", "_")] = value
    env.update(extra or {})
    return env


def parse_output(out):
    """(status, headers, body, whole) from a program's stdout; whole is True
    when the headers ended and the body has its Content-Length."""
    end = out.find(b"\r\n\r\n")
    if end < 0:
        return None, {}, b"", False
    headers = {}
    for line in out[:end].decode("latin-1").split("\r\n"):
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    body = out[end + 4:]
    try:
        status = int(headers.get("status", "").split(" ")[0])
    except ValueError:
        return None, headers, body, False
    if status in (204, 304):
        return status, headers, body, body == b""
    try:
        whole = int(headers["content-length"]) == len(body)
    except (KeyError, ValueError):
        whole = False
    return status, headers, body, whole


def run(program, method, path, data, headers=None, query="", body=b"", extra=None, timeout=30):
    """Runs the program (a path) once; returns (status, headers, body, whole, exit code)."""
    env = environment(method, path, data, headers, query, body, extra)
    proc = subprocess.run([program], input=body, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout)
    status, out_headers, out_body, whole = parse_output(proc.stdout)
    return status, out_headers, out_body, whole, proc.returncode


# FastCGI (the protocol nginx speaks to the FastCGI mode's workers): the
# record types a responder's request and answer use.
FCGI_BEGIN_REQUEST, FCGI_END_REQUEST, FCGI_PARAMS, FCGI_STDIN, FCGI_STDOUT = 1, 3, 4, 5, 6


def _record(kind, content, request_id=1):
    return struct.pack(">BBHHBB", 1, kind, request_id, len(content), 0, 0) + content


def _pair_length(n):
    return struct.pack(">B", n) if n < 128 else struct.pack(">I", n | 0x80000000)


def fastcgi_request(sock, env, body=b"", timeout=40):
    """One request over a connected FastCGI socket as nginx sends it (a
    responder's BEGIN_REQUEST, `env` as PARAMS, `body` as STDIN); returns
    the STDOUT bytes, a CGI program's output (parse_output reads it), and
    whether END_REQUEST came."""
    sock.settimeout(timeout)
    pairs = b"".join(_pair_length(len(k.encode())) + _pair_length(len(v.encode())) + k.encode() + v.encode()
                     for k, v in env.items())
    out = _record(FCGI_BEGIN_REQUEST, struct.pack(">HB5x", 1, 0))
    for i in range(0, len(pairs), 65535):
        out += _record(FCGI_PARAMS, pairs[i:i + 65535])
    out += _record(FCGI_PARAMS, b"")
    for i in range(0, len(body), 65535):
        out += _record(FCGI_STDIN, body[i:i + 65535])
    out += _record(FCGI_STDIN, b"")
    stdout, buffer, ended = b"", b"", False
    try:
        sock.sendall(out)
        while not ended:
            chunk = sock.recv(65536)
            if not chunk:
                break
            buffer += chunk
            while len(buffer) >= 8:
                _, kind, _, length, padding = struct.unpack(">BBHHB", buffer[:7])
                if len(buffer) < 8 + length + padding:
                    break
                if kind == FCGI_STDOUT:
                    stdout += buffer[8:8 + length]
                elif kind == FCGI_END_REQUEST:
                    ended = True
                buffer = buffer[8 + length + padding:]
    except OSError:
        pass
    return stdout, ended


def main(argv):
    parser = argparse.ArgumentParser(prog="cgi_program.py env", description="the CGI environment of one request")
    parser.add_argument("method")
    parser.add_argument("path")
    parser.add_argument("--query", default="")
    parser.add_argument("--body", help="a file holding the body (CONTENT_LENGTH is its size)")
    parser.add_argument("--data", help="MOCKCLOUD_DATA")
    parser.add_argument("--header", action="append", default=[], help="an HTTP header, 'Name: value'")
    parser.add_argument("extra", nargs="*", help="NAME=value, added last")
    args = parser.parse_intermixed_args(argv)
    body = open(args.body, "rb").read() if args.body else b""
    headers = dict((name.strip(), value.strip()) for name, value in (h.split(":", 1) for h in args.header))
    extra = dict(item.split("=", 1) for item in args.extra)
    env = environment(args.method, args.path, args.data, headers, args.query, body, extra)
    sys.stdout.write("".join("%s=%s\0" % item for item in env.items()))


if __name__ == "__main__":
    if sys.argv[1:2] != ["env"]:
        sys.exit("usage: " + __doc__.split("\n\n")[1].strip())
    main(sys.argv[2:])
