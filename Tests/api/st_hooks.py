"""schemathesis hooks for Tests/api/run.sh (SCHEMATHESIS_HOOKS=st_hooks).

A valid `wait` holds a read up to 60 s when nothing changes, which is what
most generated reads find (a new user key, an anchor at the end): with it,
schemathesis's thousands of requests would take hours. So a valid `wait` is
taken out of every request before it is sent; an invalid one stays, and its
400 is checked. The waits themselves are checked against the document by
Tests/api/conformance.py, on the answers the acceptance cases
(Tests/acceptance/cases/waiting.sh) got.
"""
import re

import schemathesis

VALID_WAIT = re.compile(r"^[0-9]{1,2}$")


@schemathesis.hook
def before_call(context, case, kwargs):
    query = case.query
    if not query or "wait" not in query:
        return
    value = str(query["wait"])
    if VALID_WAIT.match(value) and 1 <= int(value) <= 60:
        del query["wait"]
