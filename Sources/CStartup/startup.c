// libcrypto's CPU probe, on demand. Linking libcrypto.a statically brings in
// its `.init` call to OPENSSL_cpuid_setup, which runs CPUID about six times;
// under virtualisation each CPUID traps to the hypervisor (~10 µs each on
// the development box), so every CGI process, that is every request, paid
// ~60 µs for it, HMAC on or off. The static release link wraps that symbol
// (`--wrap=OPENSSL_cpuid_setup`, Package.swift) so load time does nothing:
// SHA-256 then uses OpenSSL's baseline x86-64 code, with the same digests.
// mockcloud_probe_cpu_for_crypto() runs the real probe (which also honours
// OPENSSL_ia32cap) when a large input makes the faster code worth it.
//
// Without the wrap (debug builds, where libcrypto is a shared library that
// probes when it loads) __real_OPENSSL_cpuid_setup is absent and the probe
// does nothing; every static release program, mockcloud-admin too, is
// wrapped. Tests/acceptance/cases/build.sh checks
// that the static programs keep the real probe. The programs are single-
// threaded, so the flag needs no atomics.

#include <stddef.h>
#include "CStartup.h"

// Resolved by the linker to the real probe under --wrap; absent otherwise.
extern void __real_OPENSSL_cpuid_setup(void) __attribute__((weak));

void __wrap_OPENSSL_cpuid_setup(void) {}

void mockcloud_probe_cpu_for_crypto(void) {
    static int probed = 0;
    if (!probed && __real_OPENSSL_cpuid_setup) {
        probed = 1;
        __real_OPENSSL_cpuid_setup();
    }
}
