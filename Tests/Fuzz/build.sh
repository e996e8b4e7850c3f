#!/usr/bin/env bash
# Builds the libFuzzer targets into .build/fuzz/ (see Tests/Fuzz/README.md).
# The library is compiled once with coverage + AddressSanitizer and
# -enable-testing (so targets reach internal decoders through @testable
# import); each target then links FuzzSupport.swift + its own file against it.
# Only what changed is rebuilt.
#
#   Tests/Fuzz/build.sh [target...]     default: every target
#   FUZZ_SOURCES=dir                    build another copy of Sources/ (e.g. a commit's)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
[[ ! -d /opt/swift/usr/bin ]] || PATH="/opt/swift/usr/bin:$PATH"

source Tests/Fuzz/targets.sh
sources="${FUZZ_SOURCES:-Sources}"
out="${FUZZ_OUT:-.build/fuzz}"
lib="$out/lib"
mkdir -p "$lib"

# -g: file:line in stack traces; the toolchain's lld: gold warns about ASan symbols.
flags=(-O -g -sanitize=fuzzer,address -swift-version 6 -package-name MockCloud
    -parse-as-library -use-ld=lld -I "$sources/COpenSSL" -I "$sources/CStartup/include")

newer_than() { # newer_than FILE PATH... : true when FILE is missing or older than any PATH
    [[ ! -e "$1" ]] && return 0
    local target="$1"; shift
    [[ -n "$(find "$@" -newer "$target" -print -quit)" ]]
}

library_inputs=("$sources/MockCloudCore" "$sources/COpenSSL" Tests/Fuzz/build.sh)
[[ ! -d "$sources/CStartup" ]] || library_inputs+=("$sources/CStartup")
if newer_than "$lib/libMockCloudCore.a" "${library_inputs[@]}"; then
    echo "fuzz: building MockCloudCore (ASan + coverage) from $sources"
    rm -f "$lib/libMockCloudCore.a" "$lib/CStartup.o"
    # Sources from before CStartup existed (FUZZ_SOURCES) build without it.
    if [[ -f "$sources/CStartup/startup.c" ]]; then
        clang -O2 -g -c -I "$sources/CStartup/include" "$sources/CStartup/startup.c" -o "$lib/CStartup.o"
    fi
    swiftc "${flags[@]}" -enable-testing -module-name MockCloudCore \
        -emit-module -emit-module-path "$lib/MockCloudCore.swiftmodule" \
        -emit-library -static -o "$lib/libMockCloudCore.a" \
        "$sources"/MockCloudCore/*/*.swift 2> "$lib/build.log" \
        || { cat "$lib/build.log" >&2; exit 1; }
fi

targets=("$@")
((${#targets[@]})) || targets=("${FUZZ_ALL_TARGETS[@]}")
for target in "${targets[@]}"; do
    file="$(fuzz_source "$target")"
    if newer_than "$out/$target" "$lib/libMockCloudCore.a" Tests/Fuzz/FuzzSupport.swift "Tests/Fuzz/$file"; then
        echo "fuzz: building $target"
        swiftc "${flags[@]}" -module-name "$(basename "$file" .swift)" -I "$lib" \
            Tests/Fuzz/FuzzSupport.swift "Tests/Fuzz/$file" "$lib/libMockCloudCore.a" \
            $([[ -f "$lib/CStartup.o" ]] && echo "$lib/CStartup.o") -lcrypto \
            -o "$out/$target" 2> "$lib/$target.log" \
            || { cat "$lib/$target.log" >&2; exit 1; }
    fi
done
