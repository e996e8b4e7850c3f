#!/usr/bin/env python3
"""Every status the programs or nginx can send is in docs/openapi.yaml.

    statuses.py DOC REPO

Reads the codes from the sources that produce them: the programs'
`HTTPStatus` (Sources/MockCloudHTTP/HTTPStatus.swift, "the programs send
only the codes named here") and the `Status:` lines the signal handlers
write (CGIProgram.swift), and nginx's own answers in the snippet
(`error_page` targets, `return NNN`). Each must be a response of at least
one operation in the document; 405, which no documented operation answers,
must be the `MethodNotAllowed` response. Complements conformance.py, which
sees only the answers the acceptance cases happen to provoke.
"""

import glob
import os
import re
import sys

import yaml


def produced(repo):
    codes = {}

    def add(code, where):
        codes.setdefault(str(code), where)

    http = os.path.join(repo, "Sources/MockCloudHTTP/HTTPStatus.swift")
    for match in re.finditer(r"static var \w+: HTTPStatus \{ (\d{3}) \}", open(http, encoding="utf-8").read()):
        add(match.group(1), "HTTPStatus.swift")
    for path in glob.glob(os.path.join(repo, "Sources/**/*.swift"), recursive=True):
        for match in re.finditer(r"Status: (\d{3}) ", open(path, encoding="utf-8").read()):
            add(match.group(1), os.path.relpath(path, repo))
    for path in glob.glob(os.path.join(repo, "nginx/*.conf")):
        text = open(path, encoding="utf-8").read()
        where = os.path.relpath(path, repo)
        for match in re.finditer(r"^\s*error_page\s+(\d{3})\s+(?:=(\d{3})\s+)?", text, re.M):
            add(match.group(2) or match.group(1), where)
        for match in re.finditer(r"\breturn\s+(\d{3})\b", text):
            add(match.group(1), where)
    return codes


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    doc = yaml.safe_load(open(sys.argv[1], encoding="utf-8"))
    documented = set()
    for item in doc["paths"].values():
        for method, operation in item.items():
            if isinstance(operation, dict) and "responses" in operation:
                documented.update(str(code) for code in operation["responses"])
    if "MethodNotAllowed" in doc.get("components", {}).get("responses", {}):
        documented.add("405")
    codes = produced(sys.argv[2])
    missing = {code: where for code, where in codes.items() if code not in documented}
    for code, where in sorted(missing.items()):
        print(f"status {code} (sent by {where}) is in no response of {sys.argv[1]}")
    print(f"{len(codes)} statuses the sources send: {', '.join(sorted(codes))}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
