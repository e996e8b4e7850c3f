#!/usr/bin/env bash
# An app adds MockCloudClient by version (part of make test-all; a minute): this
# tree, as it is now, becomes a git repository tagged with the VERSION
# file's version in a temporary folder; a new package depends on it with
# `.package(url: "file://…", from: VERSION)` and builds and runs a program that uses the MockCloudClient
# product. SwiftPM refuses a versioned dependency whose product closure has
# unsafe flags, so this fails the moment one creeps in. Then what the app
# can name: the wire types it uses come with MockCloudClient, the server's
# (QueryParameters) do not. Prints `N passed, M failed` last.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$REPO/Tests/support/cases.sh"
work_dir mcdep
[[ ! -d /opt/swift/usr/bin ]] || PATH="/opt/swift/usr/bin:$PATH"

VERSION="$(tr -d '[:space:]' <"$REPO/VERSION")"
it "this tree, tagged $VERSION, is a package another one can depend on by version"
mkdir -p "$WORK/mockcloud"
(cd "$REPO" && git ls-files -z --cached --others --exclude-standard) |
    (cd "$REPO" && xargs -0 cp --parents -t "$WORK/mockcloud" 2>/dev/null) || true
(cd "$WORK/mockcloud" && git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm tree &&
    git tag "$VERSION") >"$WORK/git.out" 2>&1 || fail "git: $(cat "$WORK/git.out")"

mkdir -p "$WORK/app/Sources/app"
cat >"$WORK/app/Package.swift" <<SWIFT
// swift-tools-version:6.0
import PackageDescription
let package = Package(
    name: "app",
    platforms: [.iOS(.v16), .macOS(.v13)],
    dependencies: [.package(url: "file://$WORK/mockcloud", from: "$VERSION")],
    targets: [.executableTarget(name: "app", dependencies: [.product(name: "MockCloudClient", package: "mockcloud")])]
)
SWIFT
cat >"$WORK/app/Sources/app/main.swift" <<'SWIFT'
import Foundation
import MockCloudClient

// What an app does first, with no box to talk to: the wire types it
// receives, a body, and a client whose request finds nothing listening.
let body = try JSONText(validating: #"{"kg": 70.1, "fat": 0.182}"#)
let item = try UploadItem.sample(syncIdentifier: "nm-1-weight", syncVersion: 2, body: body)
precondition(Anchor("9f2c4e1a7b3d5c60.0.21") != nil && Anchor("9F2C.0.1") == nil)
let pem = "-----BEGIN CERTIFICATE-----\nAAEC\n-----END CERTIFICATE-----\n"
let trust = try TrustAnchor(pem: Array(pem.utf8))
let box = URL(string: "https://127.0.0.1:9")!
#if canImport(Darwin)
let transport = try URLSessionTransport(baseURL: box, trust: trust)
#else
let transport = try CurlTransport(baseURL: box, trust: trust)
#endif
let once = RetryPolicy(maxAttempts: 1, initialDelay: .zero, maxDelay: .zero, maxRetryAfter: .zero)
let client = BoxClient(configuration: ClientConfiguration(userKey: UserKey("u1")!, retry: once), transport: transport)
do {
    _ = try await client.upload([item])
    print("unexpected: an upload to a closed port succeeded")
} catch let error as ClientError where error.code == .unavailable {
    print("ok \(item.id) \(body) \(error.detail)")
}
SWIFT
# No index store, no debug information and no check of the compiler's own
# LLVM IR (Tests/support/test-build.sh): nothing here needs them, and they
# cost the build more than a third more CPU.
if ! (cd "$WORK/app" && swift build --disable-index-store -Xswiftc -gnone -Xswiftc -Xfrontend -Xswiftc -disable-llvm-verify \
    >"$WORK/build.out" 2>&1); then
    fail "the dependent package does not build: $(grep -m5 -E 'error' "$WORK/build.out")"
fi

it "the dependent program runs, using the client's types and transport"
if [[ -x "$WORK/app/.build/debug/app" ]]; then
    out="$("$WORK/app/.build/debug/app" 2>&1)"
    [[ "$out" == "ok nm-1-weight {\"kg\": 70.1, \"fat\": 0.182} "* ]] || fail "it printed: $out"
else
    fail "no program was built"
fi

it "the app sees the wire types it uses through MockCloudClient, and none of the server's"
# Two sources type-checked against the modules the dependent build made:
# one that names what an app names (it must check, or the next would prove
# nothing), one that names a server-side wire type (it must not).
modules="$(cd "$WORK/app" && swift build --show-bin-path 2>/dev/null)/Modules"
typecheck() {
    swiftc -typecheck -I "$modules" -I "$WORK/mockcloud/Sources/CCurl" -I "$WORK/mockcloud/Sources/COpenSSL" "$1" >"$WORK/typecheck.out" 2>&1
}
cat >"$WORK/uses.swift" <<'SWIFT'
import MockCloudClient
let names: (UserKey?, DeviceID?, MessageID?, Anchor?, JSONText?, Envelope?, FeedPage?, Deletion?, CatchUp.Reason) =
    (UserKey("u1"), DeviceID("d"), MessageID("m"), .beginning, nil, nil, nil, nil, .compacted)
SWIFT
cat >"$WORK/server.swift" <<'SWIFT'
import MockCloudClient
let parameter = QueryParameters.wait
SWIFT
if ! typecheck "$WORK/uses.swift"; then
    fail "an app's use of the wire types does not check: $(grep -m3 error "$WORK/typecheck.out")"
elif typecheck "$WORK/server.swift"; then
    fail "an app can name QueryParameters, a server-side wire type"
elif ! grep -q "cannot find 'QueryParameters' in scope" "$WORK/typecheck.out"; then
    fail "the server-side type was refused for another reason: $(grep -m3 error "$WORK/typecheck.out")"
fi

summary
