#!/usr/bin/env python3
"""Which OpenAPI links schemathesis followed, from its NDJSON report.

    links_used.py REPORT.ndjson [REQUIRED ...]

Prints each link followed ("SOURCE -> [STATUS] NAME -> TARGET") with how
often; exits 1 when a REQUIRED link name (e.g. `nextPage`) with its source
and target (`GET /inbox -> nextPage -> GET /inbox`; `|` between
alternatives: `PUT /a | POST /b -> readBack -> GET /c`) was never followed, so
the stateful phase cannot silently stop testing the chains it is there for.
"""

import collections
import json
import re
import sys


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    used = collections.Counter()
    with open(sys.argv[1], encoding="utf-8") as report:
        for line in report:
            event = json.loads(line)
            finished = event.get("ScenarioFinished")
            if not finished:
                continue
            for case in (finished.get("recorder") or {}).get("cases", {}).values():
                transition = case.get("transition") or (case.get("value") or {}).get("transition")
                if transition:
                    used[transition["id"]] += 1
    for name, count in used.most_common():
        print(f"  {count:4d}  {name}")
    missing = []
    for wanted in sys.argv[2:]:
        source, link, target = (part.strip() for part in wanted.split("->"))
        def alternatives(text):
            return "(?:" + "|".join(re.escape(part.strip()) for part in text.split("|")) + ")"
        pattern = re.compile(rf"^{alternatives(source)} -> \[\d+\] {alternatives(link)} -> {alternatives(target)}$")
        if not any(pattern.match(name) for name in used):
            missing.append(wanted)
    for wanted in missing:
        print(f"never followed: {wanted}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
