# The installed programs as the release link made them (Package.swift): static,
# with the start-up work of Sources/CArgv and Sources/CStartup in place. A
# toolchain or OpenSSL update that undid one of them would otherwise only show
# as a slower benchmark. No server: readelf and nm (binutils) on the files.

for program in user-settings inbox; do
    binary="$MOCKCLOUD_CGI_BIN/$program"

    it "$program is a static executable: no dynamic loader, no shared libraries at start"
    if headers="$(readelf -lW "$binary" 2>&1)"; then
        grep -q "INTERP" <<<"$headers" && fail "$program asks for a dynamic loader: $(grep -A1 INTERP <<<"$headers")"
    else
        fail "readelf $binary: $headers"
    fi
    symbols="$(nm "$binary" 2>&1)" || symbols="nm failed: $symbols"

    it "$program takes argv from glibc: the Swift runtime's /proc/self/maps scan is not linked"
    [[ "$symbols" != "nm failed: "* ]] || fail "$symbols"
    grep -qi "argvGrabber" <<<"$symbols" && fail "$program links the runtime's ArgvGrabber"
    grep -q " t keepArguments$" <<<"$symbols" || fail "$program: Sources/CArgv's argv hook is not linked"

    it "$program runs libcrypto's CPU probe only on demand, and still has it for large inputs"
    grep -q " __wrap_OPENSSL_cpuid_setup$" <<<"$symbols" || fail "$program: OPENSSL_cpuid_setup is not wrapped"
    grep -Eq " [tT] OPENSSL_cpuid_setup$" <<<"$symbols" ||
        fail "$program: the real OPENSSL_cpuid_setup is not linked, large inputs would hash without SHA-NI/AVX2"
done
