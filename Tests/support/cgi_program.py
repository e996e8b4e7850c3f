"""A MockCloud program run the way fcgiwrap runs it: the CGI environment
nginx's snippet (nginx/mockcloud-locations.conf) gives it, the body on
stdin, the answer parsed from stdout. The Python side's one CGI environment
builder: the stress tests, the benchmarks, the fuzz seeds and
check_formats.py use it (the Swift process tests have their own, in
Tests/EndToEndTests/ProgramRunner.swift).

Python 3 standard library only.
"""
import os
import subprocess


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
