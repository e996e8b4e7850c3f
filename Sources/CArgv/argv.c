// `CommandLine.arguments` for the static CGI programs, without the Swift
// runtime's start-up scan. On Linux the runtime finds argv with a load-time
// constructor that reads /proc/self/maps and searches the stack for it
// (swift/stdlib/public/CommandLineSupport/CommandLine.cpp): five system
// calls and a search in every process, that is every request
// (Benchmarks/README.md, "Where the time goes", 2.). glibc hands argc and argv to each `.init_array` function, so
// they are kept from there. The two functions below have the runtime's
// names, calling convention and meaning; defining them in an object of the
// link keeps the runtime's CommandLine object (and its constructor) out of
// a static link. Only the CGI executables depend on this target, and only
// their release builds (static, Package.swift) compile it: in a dynamic
// link the runtime keeps its own getter and these would half-interpose.
// Tests/acceptance/cases/build.sh checks the linked programs.

#include <stddef.h>
#include <stdlib.h>  // features.h: __GLIBC__

// glibc passes (argc, argv, envp) to `.init_array` functions; musl passes
// nothing, so a musl build keeps the runtime's own argv code.
#if defined(MOCKCLOUD_STATIC_ARGV) && defined(__GLIBC__)

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

__attribute__((swiftcall))
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

__attribute__((swiftcall))
void _swift_stdlib_overrideUnsafeArgvArgc(char **argv, int argc) {
    overrideArgv = argv;
    overrideArgc = argc;
}

#endif
