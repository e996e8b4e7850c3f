#!/usr/bin/env bash
# Builds the libFuzzer targets into .build/fuzz/ (see Tests/Fuzz/README.md;
# FUZZ_OPTIMIZE=-Onone: into .build/fuzz/onone/, see targets.sh).
# The libraries are compiled once with coverage + AddressSanitizer and
# -enable-testing (so targets reach internal decoders through @testable
# import); each target then links FuzzSupport.swift + its own file against them.
# Only what changed is rebuilt.
#
#   Tests/Fuzz/build.sh [target...]     default: every target
#   FUZZ_SOURCES=dir                    build another copy of Sources/ (of this layout)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
[[ ! -d /opt/swift/usr/bin ]] || PATH="/opt/swift/usr/bin:$PATH"

source Tests/Fuzz/targets.sh
sources="${FUZZ_SOURCES:-Sources}"
out="$fuzz_built"
lib="$out/lib"
mkdir -p "$lib"

# -g: file:line in stack traces; the toolchain's lld: gold warns about ASan symbols.
# -disable-llvm-verify: no check of the compiler's own LLVM IR (a check for
# compiler bugs, not ours; a seventh of a build's CPU).
flags=("$FUZZ_OPTIMIZE" -g -sanitize=fuzzer,address -Xfrontend -disable-llvm-verify -swift-version 6 -package-name MockCloud
    -parse-as-library -use-ld=lld -I "$sources/COpenSSL" -I "$sources/CStartup/include")

newer_than() { # newer_than FILE PATH... : true when FILE is missing or older than any PATH
    [[ ! -e "$1" ]] && return 0
    local target="$1"; shift
    [[ -n "$(find "$@" -newer "$target" -print -quit)" ]]
}

# The library targets, lowest first (Package.swift): each is compiled into
# its own module and archive against the ones before it.
modules=(MockCloudJSON MockCloudWire MockCloudSystem MockCloudStore MockCloudConfig MockCloudHTTP)
libraries=()
for module in "${modules[@]}"; do libraries+=("$lib/lib$module.a"); done

library_inputs=("$sources" Tests/Fuzz/build.sh)
if newer_than "$lib/libMockCloudHTTP.a" "${library_inputs[@]}"; then
    echo "fuzz: building ${modules[*]} (ASan + coverage) from $sources"
    rm -f "$lib"/lib*.a "$lib/CStartup.o"
    clang -O2 -g -c -I "$sources/CStartup/include" "$sources/CStartup/startup.c" -o "$lib/CStartup.o"
    # -wmo: one object per archive, so linking a target pulls in all of a
    # module, the conformances it declares for lower modules' types
    # (DomainErrorStatus.swift) included; no symbol refers to those.
    for module in "${modules[@]}"; do
        swiftc "${flags[@]}" -wmo -enable-testing -module-name "$module" -I "$lib" \
            -emit-module -emit-module-path "$lib/$module.swiftmodule" \
            -emit-library -static -o "$lib/lib$module.a" \
            "$sources/$module"/*.swift 2> "$lib/build.log" \
            || { cat "$lib/build.log" >&2; exit 1; }
    done
fi

targets=("$@")
((${#targets[@]})) || targets=("${FUZZ_ALL_TARGETS[@]}")
for target in "${targets[@]}"; do
    file="$(fuzz_source "$target")"
    if newer_than "$out/$target" "${libraries[@]}" Tests/Fuzz/FuzzSupport.swift "Tests/Fuzz/$file"; then
        echo "fuzz: building $target"
        swiftc "${flags[@]}" -module-name "$(basename "$file" .swift)" -I "$lib" \
            Tests/Fuzz/FuzzSupport.swift "Tests/Fuzz/$file" "${libraries[@]}" "$lib/CStartup.o" -lcrypto \
            -o "$out/$target" 2> "$lib/$target.log" \
            || { cat "$lib/$target.log" >&2; exit 1; }
    fi
done
