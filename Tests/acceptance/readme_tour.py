#!/usr/bin/env python3
"""The README's curl tour as a script that checks it (Tests/acceptance/cases/tour.sh).

    readme_tour.py README BASE CA

Prints a bash script: the README's "## A short curl tour" block with its
address and CA replaced by BASE and CA, each command that ends in a status
comment (`# 409: older`) run for its status alone and compared with that
comment, the others run as written. The script prints one line per
mismatch (`command: status 500, expected 409`) and nothing else.
"""
import re
import shlex
import sys

HEADING = "## A short curl tour"
STATUS = re.compile(r"\s+#\s+(\d{3})\b[^'\"]*$")


def tour_block(readme):
    """The lines of the first ```sh block under the tour's heading."""
    lines = open(readme, encoding="utf-8").read().split("\n")
    start = lines.index(HEADING)
    opening = next(i for i in range(start, len(lines)) if lines[i] == "```sh")
    closing = lines.index("```", opening + 1)
    return lines[opening + 1:closing]


def commands(lines):
    """Whole commands: a line ending in a backslash, or inside a quote, goes on."""
    command = []
    for line in lines:
        command.append(line)
        text = "\n".join(command)
        if text.endswith("\\") or text.count("'") % 2:
            continue
        yield text
        command = []
    if command:
        yield "\n".join(command)


def checked(command):
    """The bash that runs COMMAND and reports a status other than its comment's."""
    found = STATUS.search(command)
    if not found or command.lstrip().startswith("#"):
        return command
    run = command[:found.start()]
    shown = " ".join(run.split())[:100]
    return (f"got=$({run} -o /dev/null -w '%{{http_code}}')\n"
            f"[[ \"$got\" == {found.group(1)} ]] || "
            f"printf '%s: status %s, expected %s\\n' {shlex.quote(shown)} \"$got\" {found.group(1)}")


def main():
    readme, base, ca = sys.argv[1:4]
    print("set -u")
    for command in commands(tour_block(readme)):
        command = command.replace("https://127.0.0.1:8443", base).replace("run/tls/ca.crt", shlex.quote(ca))
        print(checked(command))


if __name__ == "__main__":
    main()
