#!/usr/bin/env python3
"""Checks answers the real stack gave against docs/openapi.yaml.

    conformance.py DOC RECORD_DIR

RECORD_DIR holds what Tests/acceptance/run.sh keeps with
MOCKCLOUD_API_RECORD=DIR: index.tsv (one line per answer: name, stack,
status, method, path, case) and NAME.headers / NAME.body. Every answer of
the acceptance cases must be one the document describes:

- a documented path and method: the status is listed for that operation;
  the headers the response marks required are there and match their
  schema; a response with content has that Content-Type and a body valid
  against its schema (HEAD: no body); a response without content has none;
- a documented path, another method: 405 with an `Allow` header as the
  `MethodNotAllowed` response describes, and its body;
- any other path: the `NotFound` response (404 `{"error": "not found"}`),
  except on the acceptance stack that has an upstream, where other paths
  go to it; and except the answers nginx gives before it routes a request
  (listed in PRE_ROUTING below), which must still be a documented error body.

One test per acceptance case: it fails when any of its answers is not in
the document. Prints `N passed, M failed` last; exits 1 on any failure.
"""

import collections
import json
import os
import re
import sys

import yaml
from jsonschema import Draft202012Validator

# The acceptance stacks that run fake programs or proxy other paths: their
# answers to those paths are not MockCloud's.
FAKE_PROGRAM_STACKS = {"fake", "fake2"}
UPSTREAM_STACKS = {"upstream"}
# Statuses nginx answers before it matches a location (a request line, the
# headers, the framing): the document lists them on every operation, and on
# a path no route serves they keep their own status.
PRE_ROUTING = {"400", "408", "414", "431", "501"}
ERROR_STATUSES_WITHOUT_ROUTE = {"404"} | PRE_ROUTING


def pointer_escape(part):
    return part.replace("~", "~0").replace("/", "~1")


class Document:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            self.spec = yaml.safe_load(f)
        self.paths = []
        for template in self.spec["paths"]:
            pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"
            self.paths.append((re.compile(pattern), template))
        self._validators = {}

    def resolve(self, node, pointer):
        """Follows a Reference Object; returns (node, its JSON pointer)."""
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            assert ref.startswith("#/"), ref
            pointer = ref[1:]
            node = self.spec
            for part in ref[2:].split("/"):
                node = node[part.replace("~1", "/").replace("~0", "~")]
        return node, pointer

    def errors(self, schema_pointer, instance):
        """Schema errors of `instance` against the schema at `schema_pointer`."""
        validator = self._validators.get(schema_pointer)
        if validator is None:
            # The whole document is the root, so `#/components/...` refs
            # resolve; its OpenAPI keys are no JSON Schema keywords.
            root = dict(self.spec)
            root["$ref"] = "#" + schema_pointer
            validator = Draft202012Validator(root)
            self._validators[schema_pointer] = validator
        return [
            f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}"
            for e in validator.iter_errors(instance)
        ]

    def template(self, path):
        bare = path.split("?", 1)[0]
        for pattern, template in self.paths:
            if pattern.match(bare):
                return template
        return None


def parse_headers(path):
    """The last header block curl wrote (after any 100 Continue)."""
    headers = {}
    with open(path, encoding="latin-1") as f:
        for line in f.read().replace("\r", "").split("\n"):
            if line.startswith("HTTP/"):
                headers = {}
            elif ":" in line:
                name, value = line.split(":", 1)
                headers.setdefault(name.strip().lower(), value.strip())
    return headers


def check_response(doc, response, pointer, method, status, headers, body):
    """Problems of one answer against one documented response."""
    problems = []
    response, pointer = doc.resolve(response, pointer)
    for name, header in (response.get("headers") or {}).items():
        header, header_pointer = doc.resolve(header, f"{pointer}/headers/{pointer_escape(name)}")
        value = headers.get(name.lower())
        if value is None:
            if header.get("required"):
                problems.append(f"{status}: required header {name} missing")
            continue
        schema_pointer = f"{header_pointer}/schema"
        for error in doc.errors(schema_pointer, value):
            problems.append(f"{status}: header {name} {value!r}: {error}")
    content = response.get("content") or {}
    media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if method == "HEAD":
        # curl --head writes the headers where the body would go.
        return problems
    if not content:
        if body:
            problems.append(f"{status}: the document says no body, got {body[:200]!r}")
        return problems
    if media not in content:
        problems.append(f"{status}: Content-Type {media!r}, the document says {sorted(content)}")
        return problems
    try:
        instance = json.loads(body)
    except ValueError:
        problems.append(f"{status}: body is not JSON: {body[:200]!r}")
        return problems
    schema_pointer = f"{pointer}/content/{pointer_escape(media)}/schema"
    for error in doc.errors(schema_pointer, instance):
        problems.append(f"{status}: body {body[:200]!r}: {error}")
    return problems


def check(doc, stack, status, method, path, headers, body):
    template = doc.template(path)
    components = "/components/responses"
    if template is None:
        if stack in UPSTREAM_STACKS:
            return []
        if status not in ERROR_STATUSES_WITHOUT_ROUTE:
            return [f"{status} on a path no route serves: the document says 404 not found"]
        return check_response(doc, doc.spec["components"]["responses"]["NotFound"],
                              f"{components}/NotFound", method, "404", headers, body) \
            if status == "404" else check_response(
                doc, {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
                "", method, status, headers, body)
    item = doc.spec["paths"][template]
    item_pointer = f"/paths/{pointer_escape(template)}"
    operation = item.get(method.lower())
    if operation is None:
        if status != "405":
            return [f"{status} for {method} on {template}, which the document does not serve: expected 405"]
        return check_response(doc, doc.spec["components"]["responses"]["MethodNotAllowed"],
                              f"{components}/MethodNotAllowed", method, status, headers, body)
    responses = operation["responses"]
    if status not in responses:
        return [f"status {status} is not documented for {method} {template} (documented: {', '.join(responses)})"]
    return check_response(doc, responses[status], f"{item_pointer}/{method.lower()}/responses/{status}",
                          method, status, headers, body)


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    doc = Document(sys.argv[1])
    record = sys.argv[2]
    index = os.path.join(record, "index.tsv")
    if not os.path.exists(index):
        print(f"no answers recorded in {record}")
        print("0 passed, 1 failed")
        return 1
    cases = collections.OrderedDict()
    answers = 0
    with open(index, encoding="utf-8") as f:
        for line in f:
            name, stack, status, method, path, case = line.rstrip("\n").split("\t", 5)
            problems = cases.setdefault(case or "(outside any case)", [])
            if stack in FAKE_PROGRAM_STACKS or status == "000":
                continue
            answers += 1
            headers = parse_headers(os.path.join(record, name + ".headers"))
            with open(os.path.join(record, name + ".body"), "rb") as body_file:
                body = body_file.read().decode("utf-8", "replace")
            for problem in check(doc, stack, status, method, path, headers, body):
                problems.append(f"{method} {path} ({stack} stack): {problem}")
    passed = failed = 0
    for case, problems in cases.items():
        if problems:
            failed += 1
            print(f"FAIL  answers of: {case}")
            for problem in problems:
                print(f"        {problem}")
        else:
            passed += 1
    print(f"{answers} answers of {len(cases)} acceptance cases checked against {sys.argv[1]}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
