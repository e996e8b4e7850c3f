// A kill at the Nth step of a process's work on one directory, for
// Tests/client/engine.py: loaded with LD_PRELOAD, it counts the calls that
// change files under KILLPOINT_DIR (a write, a sync, a truncation, a
// rename, a removal, an open for writing), across all the process's
// threads, and at call KILLPOINT_AT sends itself SIGKILL before the call
// is made. strace's `inject=...:when=N` counts per thread, and the engine's
// state calls move between threads. Built by engine.py with cc.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static atomic_long calls;
static const char *dir;
static size_t dir_length;
static long target;

__attribute__((constructor)) static void setup(void) {
    dir = getenv("KILLPOINT_DIR");
    dir_length = dir ? strlen(dir) : 0;
    const char *at = getenv("KILLPOINT_AT");
    target = at ? atol(at) : 0;
}

static int under(const char *path) {
    return dir && path && strncmp(path, dir, dir_length) == 0 && (path[dir_length] == '/' || path[dir_length] == 0);
}

static int descriptor_under(int fd) {
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 0) return 0;
    path[n] = 0;
    return under(path);
}

static void step(void) {
    if (atomic_fetch_add(&calls, 1) + 1 == target) {
        kill(getpid(), SIGKILL);
        for (;;) pause();
    }
}

#define REAL(name) static __typeof__(name) *real; if (!real) real = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

ssize_t write(int fd, const void *bytes, size_t count) {
    REAL(write);
    if (descriptor_under(fd)) step();
    return real(fd, bytes, count);
}

ssize_t pwrite(int fd, const void *bytes, size_t count, off_t offset) {
    REAL(pwrite);
    if (descriptor_under(fd)) step();
    return real(fd, bytes, count, offset);
}

int fsync(int fd) {
    REAL(fsync);
    if (descriptor_under(fd)) step();
    return real(fd);
}

int fdatasync(int fd) {
    REAL(fdatasync);
    if (descriptor_under(fd)) step();
    return real(fd);
}

int ftruncate(int fd, off_t length) {
    REAL(ftruncate);
    if (descriptor_under(fd)) step();
    return real(fd, length);
}

int rename(const char *from, const char *to) {
    REAL(rename);
    if (under(from) || under(to)) step();
    return real(from, to);
}

int renameat(int from_dir, const char *from, int to_dir, const char *to) {
    REAL(renameat);
    if (under(from) || under(to)) step();
    return real(from_dir, from, to_dir, to);
}

int unlink(const char *path) {
    REAL(unlink);
    if (under(path)) step();
    return real(path);
}

/* open and open64 alike: a step when it may create or write. */
#define OPENING(name)                                                        \
    int name(const char *path, int flags, ...) {                             \
        REAL(name);                                                          \
        va_list rest;                                                        \
        va_start(rest, flags);                                               \
        mode_t mode = (flags & O_CREAT) ? va_arg(rest, mode_t) : 0;          \
        va_end(rest);                                                        \
        if (under(path) && (flags & (O_CREAT | O_WRONLY | O_RDWR))) step(); \
        return real(path, flags, mode);                                      \
    }
OPENING(open)
OPENING(open64)

int unlinkat(int at, const char *path, int flags) {
    REAL(unlinkat);
    if (under(path)) step();
    return real(at, path, flags);
}
