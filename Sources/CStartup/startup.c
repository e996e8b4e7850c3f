// What a CGI process does before `main`, made cheaper. Every request starts
// a process, so start-up work that the request does not need is the
// service's largest cost after glibc's own. Two pieces of it are replaced:
//
// 1. `CommandLine.arguments`. On Linux the Swift runtime finds argv with a
//    load-time constructor that reads /proc/self/maps and scans the stack
//    for it (swift/stdlib/public/CommandLineSupport/CommandLine.cpp), about
//    50,000 instructions and five system calls per process. glibc hands
//    argc and argv to every `.init_array` function, so they are kept from
//    there instead. The two functions below have the runtime's names and
//    meaning; defining them here keeps the runtime's object out of the
//    static link. In a dynamic link they interpose with the same answers.
//
// 2. libcrypto's CPU probe. Linking libcrypto.a statically brings in its
//    `.init` call to OPENSSL_cpuid_setup, which runs CPUID about six times;
//    under virtualisation each CPUID traps to the hypervisor (~10 µs each
//    on the development box). The release link wraps that symbol
//    (`--wrap=OPENSSL_cpuid_setup`, Package.swift) so load time does
//    nothing: SHA-256 then uses OpenSSL's baseline x86-64 code, with the
//    same digests. mockcloud_probe_cpu_for_crypto() runs the real probe
//    (which also honours OPENSSL_ia32cap) when a large input makes the
//    faster code worth it. Without the wrap (debug builds, where libcrypto
//    is a shared library with its own probe) the wrapper is never called.

#include <stddef.h>
#include "CStartup.h"

static char *emptyArgv[] = { NULL };
static char **startArgv = NULL;
static int startArgc = 0;
static char **overrideArgv = NULL;
static int overrideArgc = 0;

static void keepArguments(int argc, char **argv, char **envp) {
    (void)envp;
    startArgc = argc;
    startArgv = argv;
}

__attribute__((section(".init_array"), used))
static void (*const keepArgumentsEntry)(int, char **, char **) = keepArguments;

char **_swift_stdlib_getUnsafeArgvArgc(int *outArgLen) {
    if (overrideArgv) {
        *outArgLen = overrideArgc;
        return overrideArgv;
    }
    if (startArgv) {
        *outArgLen = startArgc;
        return startArgv;
    }
    *outArgLen = 0;
    return emptyArgv;
}

void _swift_stdlib_overrideUnsafeArgvArgc(char **argv, int argc) {
    overrideArgv = argv;
    overrideArgc = argc;
}

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
