# MockCloud: the README's two commands are `make serve` and `make test`.
SHELL := /bin/bash
PROGRAMS := user-settings inbox mockcloud-admin
SWIFT ?= swift
export PATH := /opt/swift/usr/bin:$(PATH)

.PHONY: serve test test-all deps build install unit acceptance bench fuzz clean check-ios

## Serve HTTPS on 127.0.0.1:8443 (MOCKCLOUD_PORT/DATA/RUN/HOST/UPSTREAM/...).
serve: deps install
	@exec nginx/mockcloud-nginx.sh serve

## Every test: unit, process, acceptance (real nginx + fcgiwrap + TLS), API,
## client, stress and fuzz; Tests/run-all.sh builds the programs, then runs
## the suites side by side (docs/TESTING.md).
test: deps
	@Tests/run-all.sh

## `make test` and the long runs: make stress, fuzz, flood and testssl.
test-all: deps
	@Tests/run-all.sh --all

## What a target needs, installed with apt-get when missing: one group of
## packaging/deps.sh (serve's for `make serve`, test's for the rest).
DEPS = test
serve: DEPS = serve
deps:
	@packaging/deps.sh $(DEPS)

## SwiftPM builds a target that imports an undeclared module when that module
## happens to be built anyway; this check makes such an import (a lower layer
## importing a higher one, say) fail the build instead (Package.swift).
IMPORT_CHECK := --explicit-target-dependency-import-check error

## Less run-time type work per process (Benchmarks/README.md, "Where the
## time goes", 6., has the figures): concrete generic types (`[JSONMember]`,
## `Optional<...>`) are reached through their metadata accessors, not by
## demangling their names, and copies and destroys of optional structs are
## lowered directly, not through Optional's value witnesses, whose first use
## builds Optional's metadata in every inbox request. Hidden front-end
## flags of Swift 6.3, given here and not in Package.swift, whose products
## must carry no unsafe flags for apps that add the client by version.
## Should a toolchain drop one, remove it: only speed changes.
SPEED_FLAGS := -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors \
	-Xswiftc -Xfrontend -Xswiftc -disable-type-layout

## The release programs carry no debug information: nothing here reads it
## (the instruction budgets, the symbol order and the profiles work from the
## symbol table), the package strips it anyway, and it took a fifth of the
## build's CPU (44 of 217 CPU-seconds on 2 cores).
NO_DEBUG_INFO := -Xswiftc -gnone

## One release build of every program. Benchmarks/symbol-order.txt is
## not an input SwiftPM tracks: programs older than it are relinked.
build:
	@for p in user-settings inbox; do \
	    [[ .build/release/$$p -nt Benchmarks/symbol-order.txt ]] || rm -f .build/release/$$p; done
	$(SWIFT) build -c release --static-swift-stdlib $(SPEED_FLAGS) $(NO_DEBUG_INFO) $(IMPORT_CHECK)

## The built programs, into cgi-bin/: each replaced by a rename, so that a
## stack serving from this checkout never meets a missing or half-written
## program (packaging/install-programs.sh).
install: build
	@packaging/install-programs.sh .build/release cgi-bin $(PROGRAMS)

unit:
	$(SWIFT) test $(IMPORT_CHECK)

## MockCloudClient's public API against the last release's (part of make
## test; Tests/api-break/run.sh says how an intended break is recorded).
.PHONY: api-break
api-break: deps
	@Tests/api-break/run.sh

## The speed work's guards (part of `make test`): callgrind instruction
## budgets of four requests, and Benchmarks/symbol-order.txt not stale.
.PHONY: budget
budget: deps install
	@Tests/budget/instructions.sh && Tests/budget/symbol-order.sh

acceptance: install
	@Tests/acceptance/run.sh

## Per-request cost beside a C CGI floor, through nginx + TLS and as bare
## process starts, in both modes (CGI, FastCGI) beside nginx's fixed-body
## ceiling; PEER=path/to/python_mock_cloud.py adds the Python peer, stock
## and tuned (its handlers under uvicorn + uvloop + httptools, 2 workers,
## from PyPI into .build/bench-venv by packaging/deps.sh bench).
## Tables to stdout and Benchmarks/results/latest.md (docs/PERFORMANCE.md's are copied by hand).
bench:
	@packaging/deps.sh bench
	@$(MAKE) --no-print-directory install
	@python3 Benchmarks/bench.py $(if $(PEER),--peer '$(PEER)') $(BENCH_ARGS)

## Benchmarks/symbol-order.txt from callgrind profiles of the
## installed programs (the release link packs those functions together),
## then the programs relinked with it (see `build`).
.PHONY: symbol-order
symbol-order: install
	@packaging/deps.sh bench
	@Benchmarks/symbol-order.sh
	@$(MAKE) --no-print-directory install

## libFuzzer + AddressSanitizer on the parsers and the CGI path (Tests/Fuzz/):
## build into .build/fuzz/, replay Tests/Fuzz/regressions/, then fuzz each
## target for FUZZ_SECONDS (FUZZ_TARGETS="json cgi" for a subset); `args`
## throws argument lists at the installed command-line tools.
FUZZ_SECONDS ?= 60
fuzz: deps install
	@Tests/Fuzz/run.sh $(FUZZ_SECONDS)

## Stress tests (Tests/stress/): malformed requests through nginx + TLS,
## SIGKILL in the middle of writes, a full and a read-only data directory
## (tmpfs mounts: as root), 16 writers at once; a few minutes in all.
## Tests/stress/short.sh is the short run (well under a minute).
.PHONY: stress
stress: deps install
	@Tests/stress/run.sh

## One address floods the server while another is served (Tests/stress/flood.sh):
## 2,000 stalled connections from 127.0.0.1, 100 GETs from 127.0.0.2 that
## must all answer 200; figures in docs/RELIABILITY.md.
.PHONY: flood
flood: deps install
	@Tests/stress/flood.sh

## Debian's testssl.sh against the TLS setup `make serve` uses (a stack of its
## own; TESTSSL_TARGET=host:port audits a running one); docs/RELIABILITY.md.
.PHONY: testssl
testssl: install
	@packaging/deps.sh serve testssl
	@Tests/stress/testssl.sh

clean:
	rm -rf .build cgi-bin/*

## dist/mockcloud_<VERSION>_amd64.deb (packaging/build-deb.sh), dpkg-deb alone,
## and dist/mockcloud-sync_<VERSION>_amd64.deb, the devices' sync tool
## (packaging/build-sync-deb.sh).
.PHONY: deb lint-deb test-install
deb: install
	@packaging/deps.sh deb
	@packaging/build-deb.sh
	@packaging/build-sync-deb.sh

## lintian on the package: no errors allowed.
lint-deb: deb
	@packaging/deps.sh lint
	@lintian --tag-display-limit 0 --fail-on error dist/mockcloud_$$(cat VERSION)_amd64.deb

## The package as a new user meets it: a clean Debian 12 root (mmdebstrap),
## apt-get install, the site enabled, the acceptance cases through TLS with
## --cacert, an upgrade, doctor healthy and broken (several minutes).
test-install: deb
	@packaging/deps.sh install
	@Tests/install/run.sh

## docs/openapi.yaml against the running stack (Tests/api/run.sh; part of
## `make test`): the document validated, schemathesis with a fixed seed, the
## acceptance cases' answers checked against it.
.PHONY: api fuzz-api
api: deps install
	@Tests/api/run.sh

## schemathesis unbounded for API_FUZZ_SECONDS (a fresh seed each run); the
## report goes to .build/api-fuzz/.
API_FUZZ_SECONDS ?= 1800
fuzz-api: deps install
	@Tests/api/run.sh fuzz $(API_FUZZ_SECONDS)

## Requests that wait for a change (Benchmarks/wait_bench.py, about 3
## minutes): freshness from a write's 2xx to the waiter's answer, an
## ordinary GET beside 36 waiters, a write's latency at 0, 16 and 36
## waiters, the stack's CPU while 36 wait; Benchmarks/results/wait.md.
.PHONY: bench-wait
bench-wait: install
	@packaging/deps.sh serve
	@python3 Benchmarks/wait_bench.py $(BENCH_WAIT_ARGS)

## Thousands of waits on the FastCGI mode (Benchmarks/waits_bench.py, about
## a minute): 2,000 waits from 40 addresses, the stack's CPU over 10 s while
## they wait, an ordinary GET beside them against alone, and one write
## answering them all; Benchmarks/results/waits.md.
.PHONY: bench-waits
bench-waits: install
	@packaging/deps.sh serve
	@python3 Benchmarks/waits_bench.py $(BENCH_WAITS_ARGS)

## The places one device (the library following its feed and settings)
## holds through restarts and silent breaks: MOCKCLOUD_WAITS_PER_ADDRESS's
## default rests on it (Benchmarks/wait_share.py, about 2 minutes).
.PHONY: bench-wait-share
bench-wait-share: install
	@packaging/deps.sh serve
	@python3 Benchmarks/wait_share.py $(BENCH_WAIT_SHARE_ARGS)

## The mirror's freshness (Benchmarks/watch_bench.py, about a minute): a scan
## renamed into the folder `mockcloud-sync push DIR --watch` watches, until a
## phone's waiting GET /inbox?wait= has it (median and worst of 60), and a
## burst of 1,000 (how long, how many bulk requests); Benchmarks/results/watch.md.
.PHONY: bench-watch
bench-watch: install
	@packaging/deps.sh serve
	@python3 Benchmarks/watch_bench.py $(BENCH_WATCH_ARGS)

## MockCloudClient over the same link (Benchmarks/lan/bench_client.py): a
## push of 10,000 samples and a pull of the 10,000-message feed through
## the library and mockcloud-sync, plain curl beside them, with the data on
## disk and on tmpfs; the tables go to stdout and Benchmarks/results/
## client-lan{,-tmpfs}.md (docs/PERFORMANCE.md's figures are copied by hand). Needs root.
.PHONY: bench-client
bench-client: install
	@packaging/deps.sh serve
	@python3 Benchmarks/lan/bench_client.py
	@python3 Benchmarks/lan/bench_client.py --tmpfs

## SyncEngine as the app feels it (Benchmarks/engine_bench.py, a few
## minutes): freshness from a scan pushed (or another engine's enqueue)
## until it is applied in a following engine's store, 5,000 queued samples
## and 3 settings edits drained when the phone comes home, an idle engine's
## CPU; Benchmarks/results/engine.md. BENCH_ENGINE_ARGS=--lan adds
## Benchmarks/lan's 10 ms link (root).
.PHONY: bench-engine
bench-engine: install
	@packaging/deps.sh serve $(if $(findstring --lan,$(BENCH_ENGINE_ARGS)),lan)
	@python3 Benchmarks/engine_bench.py $(BENCH_ENGINE_ARGS)

## SyncEngine with a long queue (Benchmarks/engine_queue_bench.py, a few
## minutes): 100,000 samples of 300 B queued with the box away, the engine
## opened on them and drained: peak RSS against an empty engine's, the
## open's time, pendingCount; Benchmarks/results/engine-queue.md.
.PHONY: bench-engine-queue
bench-engine-queue: install
	@packaging/deps.sh serve
	@python3 Benchmarks/engine_queue_bench.py $(BENCH_ENGINE_QUEUE_ARGS)

## A compaction as the key's other clients feel it (Benchmarks/compaction_bench.py):
## an inbox of 99,000 messages, the page cache dropped, the write that makes
## compaction due, then a feed read and a one-item write at once; each one's
## latency against the 1 s gate. The table goes to stdout and
## Benchmarks/results/compaction.md. Needs root (drop_caches).
.PHONY: bench-compaction
bench-compaction: install
	@packaging/deps.sh serve
	@python3 Benchmarks/compaction_bench.py $(BENCH_COMPACTION_ARGS)

## Sync as the phone feels it (Benchmarks/lan/): a phone namespace joined to
## the server's by a 10 ms round-trip, 50 Mbit/s link (netem/tbf, or a
## user-space relay where the kernel has neither); 5 scenarios timed by an
## httpx/requests client; the table goes to stdout and Benchmarks/results/lan.md.
## Needs root (network namespaces). PEER=… adds the Python peer to scenario 5.
.PHONY: bench-lan
bench-lan: install
	@packaging/deps.sh serve lan
	@python3 Benchmarks/lan/bench_lan.py --venv .build/bench-lan-venv $(if $(PEER),--peer '$(PEER)') $(BENCH_LAN_ARGS)

## The client library, MockCloudHealth and the guides' examples (docs/SYNC.md,
## docs/HEALTHKIT.md) compiled for arm64-apple-ios16.0 (not part of make
## test: CI has no iOS SDK). On a Mac, with Xcode's SDK. On Linux, with a cross-build script and an iOS
## SDK, both given: IOS_BUILD=path/to/ios-build.sh (it runs the command
## after `--` against the SDK), and IOS_SDK_REPO=… (a git directory of the
## SDKs, passed as --sdk-repo) or IOS_SDK=… (an unpacked iPhoneOS SDK,
## passed as --sdk). Objects go to .build-ios.
IOS_TARGETS := MockCloudClient MockCloudReadmeExample MockCloudHealth MockCloudHealthExample
check-ios:
	@if command -v xcrun >/dev/null; then \
	    sdk="$$(xcrun --sdk iphoneos --show-sdk-path)" && \
	    for t in $(IOS_TARGETS); do $(SWIFT) build --triple arm64-apple-ios16.0 --sdk "$$sdk" --scratch-path .build-ios --target $$t || exit 1; done; \
	    exit 0; \
	fi; \
	need="make check-ios IOS_BUILD=path/to/ios-build.sh IOS_SDK_REPO=path/to/sdks.git (or IOS_SDK=path/to/iPhoneOS.sdk)"; \
	if [[ -z "$(IOS_BUILD)" ]]; then echo "check-ios: no xcrun here and no IOS_BUILD given; on Linux run: $$need"; exit 2; fi; \
	if [[ ! -x "$(IOS_BUILD)" ]]; then echo "check-ios: IOS_BUILD=$(IOS_BUILD) is not an executable file; give the iOS cross-build script: $$need"; exit 2; fi; \
	if [[ -n "$(IOS_SDK)" ]]; then sdk=(--sdk "$(IOS_SDK)"); sdk_dir="$(IOS_SDK)"; \
	elif [[ -n "$(IOS_SDK_REPO)" ]]; then sdk=(--sdk-repo "$(IOS_SDK_REPO)"); sdk_dir="$(IOS_SDK_REPO)"; \
	else echo "check-ios: no iOS SDK given; run: $$need"; exit 2; fi; \
	if [[ ! -d "$$sdk_dir" ]]; then echo "check-ios: $$sdk_dir is not a directory; give an iOS SDK: $$need"; exit 2; fi; \
	for t in $(IOS_TARGETS); do "$(IOS_BUILD)" "$${sdk[@]}" -- $(SWIFT) build --target $$t || exit 1; done
	@echo "check-ios: $(IOS_TARGETS) build for arm64-apple-ios16.0"
