/* floor.c: the C CGI floor that `make bench` measures MockCloud against.
 *
 * One static binary, installed as both `user-settings` and `inbox`, that does
 * the same file work as the Swift programs with nothing on top: the same
 * per-key flock, the same atomic writes (temporary file O_EXCL in the same
 * directory, fsync, rename, fsync of the directory), the same 256-byte change
 * log records (pread, pwrite, fdatasync) and the same on-disk formats, so the
 * two can serve one data directory. What it leaves out is what a yardstick
 * may leave out: no JSON parsing or printing (bodies are stored and answered
 * as sent), no preconditions, no HMAC, no log compaction, few error cases.
 *
 *   GET/PUT /user/settings, GET/PUT /inbox/<id>, GET /inbox?anchor=&limit=
 *
 * The change-log format comes from the harness's one definition, as a header
 * generated at build time (bench.py does this):
 *
 *   python3 Tests/support/formats.py c-header >changelog_format.h
 *   cc -O2 -static -I. -o floor floor.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "changelog_format.h"

enum { RECORD = CHANGELOG_RECORD, ID_MAX = CHANGELOG_ID_MAX };

static const char *data;

/* ---------------------------------------------------------------- output */

typedef struct { char *p; size_t n, cap; } buf;

static void put(buf *b, const void *s, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 4096;
        if (!(b->p = realloc(b->p, b->cap))) _exit(1);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void puts_(buf *b, const char *s) { put(b, s, strlen(s)); }
static void putf(buf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* The whole answer, CGI headers and body, in one write(2). */
static void answer(const char *status, const char *headers, const char *body, size_t len) {
    buf out = {0};
    putf(&out, "Status: %s\r\nContent-Type: application/json\r\n%sContent-Length: %zu\r\n\r\n", status, headers, len);
    put(&out, body, len);
    for (size_t off = 0; off < out.n;) {
        ssize_t w = write(1, out.p + off, out.n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) _exit(1);
        off += (size_t)w;
    }
    exit(0);
}

static void fail(const char *status, const char *message) {
    char body[256];
    int n = snprintf(body, sizeof body, "{\"error\": \"%s\"}", message);
    answer(status, "", body, (size_t)n);
}

static void syserr(const char *what, const char *path) {
    fprintf(stderr, "floor: %s %s: %s\n", what, path, strerror(errno));
    fail("500 Internal Server Error", "storage failed");
}

/* ---------------------------------------------------------------- files */

/* The whole file, or NULL when it does not exist. */
static char *read_file(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return NULL;
        syserr("open", path);
    }
    struct stat st;
    if (fstat(fd, &st) < 0) syserr("fstat", path);
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *p = malloc(cap + 1);
    for (;;) {
        if (n == cap) p = realloc(p, (cap *= 2) + 1); /* it grew since fstat */
        ssize_t r = read(fd, p + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) syserr("read", path);
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    p[n] = 0;
    *len = n;
    return p;
}

static void write_all(int fd, const void *p, size_t n, const char *path) {
    for (size_t off = 0; off < n;) {
        ssize_t w = write(fd, (const char *)p + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) syserr("write", path);
        off += (size_t)w;
    }
}

/* Atomic replace: temporary O_EXCL file in the same directory, fsync,
 * rename, fsync the directory. Creates the directory (0700) if missing. */
static void atomic_write(const char *dir, const char *name, const void *p, size_t n) {
    char tmp[4096], target[4096];
    int fd = -1;
    for (int attempt = 0; fd < 0; attempt++) {
        snprintf(tmp, sizeof tmp, "%s/.tmp-%s.%d.%d", dir, name, (int)getpid(), attempt);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) break;
        if (errno == ENOENT && attempt == 0 && mkdir(dir, 0700) == 0) continue;
        if (errno != EEXIST || attempt > 1000) syserr("create", tmp);
    }
    write_all(fd, p, n, tmp);
    if (fsync(fd) < 0) syserr("fsync", tmp);
    close(fd);
    snprintf(target, sizeof target, "%s/%s", dir, name);
    if (rename(tmp, target) < 0) syserr("rename", target);
    int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0 || fsync(d) < 0) syserr("fsync", dir);
    close(d);
}

/* The per-key lock `<data>/.locks/<scope>.<key>.lock`, held until exit. */
static void lock_key(const char *scope, const char *key, int shared) {
    char dir[4096], path[4096];
    snprintf(dir, sizeof dir, "%s/.locks", data);
    snprintf(path, sizeof path, "%s/%s.%s.lock", dir, scope, key);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 && errno == ENOENT && (mkdir(dir, 0700) == 0 || errno == EEXIST))
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) syserr("open", path);
    while (flock(fd, shared ? LOCK_SH : LOCK_EX) < 0)
        if (errno != EINTR) syserr("flock", path);
}

static void mkdirs(const char *path) {
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') { *s = 0; mkdir(p, 0700); *s = '/'; }
    if (mkdir(p, 0700) < 0 && errno != EEXIST) syserr("mkdir", p);
}

/* ---------------------------------------------------------------- helpers */

static int valid(const char *s, size_t max, const char *extra) {
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strchr(extra, c)))
            return 0;
    }
    return n >= 1 && n <= max;
}

static const char *user_key(void) {
    const char *k = getenv("HTTP_X_USER_KEY");
    if (!k || !*k) fail("400 Bad Request", "X-User-Key header required");
    if (!valid(k, 128, "_-")) fail("400 Bad Request", "invalid X-User-Key shape");
    return k;
}

/* Server time stamps as the Python mock cloud writes them. */
static void timestamp(char out[32]) {
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(out, 32, "%Y%m%dT%H%M%S", &tm);
    snprintf(out + n, 32 - n, ".%06ldZ", ts.tv_nsec / 1000);
}

static long long number_at(const char *p, size_t n) {
    long long v = 0;
    for (size_t i = 0; i < n && p[i] >= '0' && p[i] <= '9'; i++) v = v * 10 + (p[i] - '0');
    return v;
}

/* The integer after `"name": ` in a compact envelope, or -1. */
static long long field(const char *json, const char *name) {
    char pat[32];
    snprintf(pat, sizeof pat, "\"%s\": ", name);
    const char *p = strstr(json, pat);
    return p ? number_at(p + strlen(pat), 20) : -1;
}

/* Number `i` after the generation in the log header (0: compactedThrough,
 * 1: lastSeq, 2: records, 3: epoch). */
static long long header_field(const char *header, int i) {
    return number_at(header + CHANGELOG_HEADER_NUMBER_AT(i), CHANGELOG_NUMBER_DIGITS);
}

/* A record's bytes: the line, spaces, a newline at the end. */
static void pad_record(char *record, int n) {
    memset(record + n, ' ', RECORD - 1 - n);
    record[RECORD - 1] = '\n';
}

/* ---------------------------------------------------------------- /user/settings */

static void settings_get(const char *key) {
    char path[4096];
    size_t n;
    snprintf(path, sizeof path, "%s/user_settings/%s.json", data, key);
    char *doc = read_file(path, &n);
    if (!doc) fail("404 Not Found", "no settings stored for this user");
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)doc[i]) * 0x100000001b3ULL;
    char etag[64];
    snprintf(etag, sizeof etag, "ETag: \"%016llx\"\r\n", (unsigned long long)h);
    answer("200 OK", etag, doc, n);
}

static void settings_put(const char *key, const char *body, size_t len) {
    char dir[4096], path[4096], ts[32], name[160];
    size_t n;
    snprintf(dir, sizeof dir, "%s/user_settings", data);
    snprintf(path, sizeof path, "%s/%s.json", dir, key);
    snprintf(name, sizeof name, "%s.json", key);
    lock_key("user_settings", key, 0);
    free(read_file(path, &n)); /* what the last-writer-wins check reads */
    /* The client's object with serverReceivedAt appended. */
    while (len && (body[len - 1] == ' ' || body[len - 1] == '\n')) len--;
    if (len < 2 || body[0] != '{' || body[len - 1] != '}') fail("400 Bad Request", "body must be a JSON object");
    buf doc = {0};
    timestamp(ts);
    int empty = 1;
    for (size_t i = 1; i + 1 < len; i++) if (body[i] != ' ' && body[i] != '\n') { empty = 0; break; }
    put(&doc, body, len - 1);
    putf(&doc, "%s\"serverReceivedAt\": \"%s\"}", empty ? "" : ", ", ts);
    atomic_write(dir, name, doc.p, doc.n);
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < doc.n; i++) h = (h ^ (unsigned char)doc.p[i]) * 0x100000001b3ULL;
    char etag[64];
    snprintf(etag, sizeof etag, "ETag: \"%016llx\"\r\n", (unsigned long long)h);
    answer("200 OK", etag, doc.p, doc.n);
}

/* ---------------------------------------------------------------- /inbox */

static void inbox_get(const char *key, const char *id) {
    char path[4096];
    size_t n;
    snprintf(path, sizeof path, "%s/inbox/%s/messages/%s.json", data, key, id);
    char *doc = read_file(path, &n);
    if (!doc || strstr(doc, "\"deleted\": true")) fail("404 Not Found", "no message with this id");
    answer("200 OK", "", doc, n);
}

static void inbox_put(const char *key, const char *id, const char *body, size_t len) {
    char dir[4096], msgs[4096], logp[4096], path[4096], name[256], ts[32];
    const char *v = getenv("HTTP_X_SYNC_VERSION");
    long long version = v && *v ? atoll(v) : 0;
    const char *source = getenv("HTTP_X_DEVICE_ID");
    snprintf(dir, sizeof dir, "%s/inbox/%s", data, key);
    snprintf(msgs, sizeof msgs, "%s/messages", dir);
    snprintf(logp, sizeof logp, "%s/changes.log", dir);
    snprintf(path, sizeof path, "%s/%s.json", msgs, id);
    snprintf(name, sizeof name, "%s.json", id);
    lock_key("inbox", key, 0);

    int fd = open(logp, O_RDWR | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        unsigned char g[8];
        char header[RECORD], gen[17];
        if (getrandom(g, 8, 0) != 8) syserr("getrandom", "");
        for (int i = 0; i < 8; i++) snprintf(gen + 2 * i, 3, "%02x", g[i]);
        mkdirs(msgs);
        pad_record(header, snprintf(header, sizeof header, CHANGELOG_HEADER_FORMAT, gen, 0LL, 0LL, 0LL, 0LL));
        atomic_write(dir, "changes.log", header, RECORD);
        fd = open(logp, O_RDWR | O_CLOEXEC);
    }
    if (fd < 0) syserr("open", logp);
    struct stat st;
    char header[RECORD], tail[RECORD];
    if (fstat(fd, &st) < 0 || pread(fd, header, RECORD, 0) != RECORD) syserr("read", logp);
    long long count = st.st_size / RECORD - 1, last_seq = header_field(header, 1), live = 0;
    if (count > 0) {
        if (pread(fd, tail, RECORD, count * RECORD) != RECORD) syserr("read", logp);
        long long seq = number_at(tail, CHANGELOG_NUMBER_DIGITS);
        if (seq > last_seq) last_seq = seq;
        live = number_at(tail + CHANGELOG_LIVE_AT, CHANGELOG_LIVE_DIGITS);
    }

    size_t n;
    char *current = read_file(path, &n);
    int created = !current || strstr(current, "\"deleted\": true") != NULL;
    if (!created && version < field(current, "version")) fail("409 Conflict", "X-Sync-Version is lower than the stored version");
    if (created) live++;

    char record[RECORD + 1];
    pad_record(record, snprintf(record, sizeof record, CHANGELOG_RECORD_FORMAT, last_seq + 1, "P", live, id));
    if (pwrite(fd, record, RECORD, (count + 1) * RECORD) != RECORD) syserr("pwrite", logp);
    if (fdatasync(fd) < 0) syserr("fdatasync", logp);

    buf env = {0};
    timestamp(ts);
    putf(&env, "{\"id\": \"%s\", \"version\": %lld, \"seq\": %lld, \"source\": ", id, version, last_seq + 1);
    if (source && *source) putf(&env, "\"%s\"", source); else puts_(&env, "null");
    putf(&env, ", \"serverReceivedAt\": \"%s\", \"body\": ", ts);
    put(&env, len ? body : "{}", len ? len : 2);
    puts_(&env, "}");
    atomic_write(msgs, name, env.p, env.n);
    close(fd);
    if (created) {
        char location[300];
        snprintf(location, sizeof location, "Location: /inbox/%s\r\n", id);
        answer("201 Created", location, env.p, env.n);
    }
    answer("200 OK", "", env.p, env.n);
}

/* The value of `name=` in the query string (no percent-decoding needed for
 * anchors and limits), or NULL. */
static const char *query(const char *name, char *out, size_t cap) {
    const char *q = getenv("QUERY_STRING");
    size_t len = strlen(name);
    for (const char *p = q; p && *p;) {
        if (!strncmp(p, name, len) && p[len] == '=') {
            size_t n = strcspn(p + len + 1, "&");
            if (n >= cap) n = cap - 1;
            memcpy(out, p + len + 1, n);
            out[n] = 0;
            return out;
        }
        p = strchr(p, '&');
        if (p) p++;
    }
    return NULL;
}

static void inbox_feed(const char *key) {
    char logp[4096], limit_text[16], anchor_text[64], gen[17] = "0";
    long long after = 0, epoch = 0, limit = 100;
    if (query("limit", limit_text, sizeof limit_text)) limit = atoll(limit_text);
    if (limit < 1 || limit > 1000) fail("400 Bad Request", "invalid limit");
    const char *a = query("anchor", anchor_text, sizeof anchor_text);
    char want_gen[17] = "";
    if (a) {
        long long e;
        if (sscanf(a, "%16[0-9a-f].%lld.%lld", want_gen, &e, &after) != 3) fail("400 Bad Request", "malformed anchor");
    }
    lock_key("inbox", key, 1);
    snprintf(logp, sizeof logp, "%s/inbox/%s/changes.log", data, key);
    int fd = open(logp, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) syserr("open", logp);
        static const char empty[] = "{\"messages\": [], \"deleted\": [], \"anchor\": \"0.0.0\", \"hasMore\": false}";
        answer("200 OK", "", empty, sizeof empty - 1);
    }
    struct stat st;
    char header[RECORD], rec[RECORD];
    if (fstat(fd, &st) < 0 || pread(fd, header, RECORD, 0) != RECORD) syserr("read", logp);
    memcpy(gen, header + CHANGELOG_GENERATION_AT, CHANGELOG_GENERATION_DIGITS);
    gen[CHANGELOG_GENERATION_DIGITS] = 0;
    epoch = header_field(header, 3);
    long long count = st.st_size / RECORD - 1;
    if (a && after && strcmp(want_gen, gen)) fail("410 Gone", "anchor belongs to an inbox that no longer exists; restart without an anchor");

    long long lo = 0, hi = count; /* first record with seq > after */
    while (lo < hi) {
        long long mid = (lo + hi) / 2;
        if (pread(fd, rec, RECORD, (mid + 1) * RECORD) != RECORD) syserr("read", logp);
        if (number_at(rec, CHANGELOG_NUMBER_DIGITS) <= after) lo = mid + 1; else hi = mid;
    }

    buf messages = {0}, deleted = {0};
    long long taken = 0, anchor = after;
    int has_more = 0;
    char chunk[64 * RECORD], path[4096];
    for (long long i = lo; i < count && !has_more;) {
        long long want = count - i < 64 ? count - i : 64;
        if (pread(fd, chunk, want * RECORD, (i + 1) * RECORD) != want * RECORD) syserr("read", logp);
        for (long long j = 0; j < want; j++, i++) {
            const char *r = chunk + j * RECORD;
            long long seq = number_at(r, CHANGELOG_NUMBER_DIGITS);
            const char *id = r + CHANGELOG_ID_AT;
            int id_len = (int)strcspn(id, " ");
            snprintf(path, sizeof path, "%s/inbox/%s/messages/%.*s.json", data, key, id_len, id);
            size_t n;
            char *env = read_file(path, &n);
            if (env && field(env, "seq") == seq) { /* else superseded by a later change */
                if (taken == limit) { has_more = 1; break; }
                if (strstr(env, "\"deleted\": true")) {
                    putf(&deleted, "%s{\"id\": \"%.*s\", \"seq\": %lld}", deleted.n ? ", " : "", id_len, id, seq);
                } else {
                    if (messages.n) put(&messages, ", ", 2);
                    put(&messages, env, n);
                }
                taken++;
            }
            free(env);
            anchor = seq;
        }
    }
    close(fd);
    buf page = {0};
    puts_(&page, "{\"messages\": [");
    put(&page, messages.p, messages.n);
    puts_(&page, "], \"deleted\": [");
    put(&page, deleted.p, deleted.n);
    putf(&page, "], \"anchor\": \"%s.%lld.%lld\", \"hasMore\": %s}", gen, epoch, anchor, has_more ? "true" : "false");
    answer("200 OK", "", page.p, page.n);
}

/* ---------------------------------------------------------------- main */

int main(void) {
    const char *uri = getenv("DOCUMENT_URI"), *method = getenv("REQUEST_METHOD"), *cl = getenv("CONTENT_LENGTH");
    data = getenv("MOCKCLOUD_DATA");
    if (!uri || !method || !data) fail("500 Internal Server Error", "not run as CGI with MOCKCLOUD_DATA");
    if (strlen(data) > 1024) fail("500 Internal Server Error", "MOCKCLOUD_DATA is too long");
    /* Read the whole body before answering anything (fcgiwrap writes it first). */
    size_t len = cl && *cl ? (size_t)atoll(cl) : 0, got = 0;
    char *body = malloc(len + 1);
    while (got < len) {
        ssize_t r = read(0, body + got, len - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) fail("400 Bad Request", "body shorter than Content-Length");
        got += (size_t)r;
    }
    body[len] = 0;

    int get = !strcmp(method, "GET"), putm = !strcmp(method, "PUT");
    if (!strcmp(uri, "/user/settings")) {
        if (!get && !putm) fail("405 Method Not Allowed", "method not allowed");
        const char *key = user_key();
        if (get) settings_get(key);
        settings_put(key, body, len);
    }
    if (!strcmp(uri, "/inbox")) {
        if (!get) fail("405 Method Not Allowed", "method not allowed");
        inbox_feed(user_key());
    }
    if (!strncmp(uri, "/inbox/", 7)) {
        const char *id = uri + 7;
        if (!get && !putm) fail("405 Method Not Allowed", "method not allowed");
        const char *key = user_key();
        if (!valid(id, ID_MAX, "._:-")) fail("400 Bad Request", "invalid message id");
        if (get) inbox_get(key, id);
        inbox_put(key, id, body, len);
    }
    fail("404 Not Found", "not found");
}
