/* SPDX-License-Identifier: MIT */
/* The booking store: see store.h. */
#define _DEFAULT_SOURCE /* flock */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct booking_store {
    int fd;
    char writer[BOOKING_NAME_MAX + 1];
};

/* What the log says about one table. */
struct table_state {
    int booked;                       /* accepted bookings */
    char first[BOOKING_NAME_MAX + 1]; /* guest of the first one */
    uint64_t max_fence;               /* highest fence seen (refused ones are lower) */
};

int booking_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > BOOKING_NAME_MAX) return 0;
    return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

int booking_store_open(booking_store **out, const char *path, const char *writer)
{
    *out = NULL;
    if (!booking_name_ok(writer)) {
        errno = EINVAL;
        return -1;
    }
    booking_store *s = calloc(1, sizeof *s);
    if (!s) return -1;
    /* O_APPEND: a record is one write(2) at the end, never interleaved. */
    s->fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (s->fd < 0) {
        free(s);
        return -1;
    }
    strcpy(s->writer, writer);
    *out = s;
    return 0;
}

void booking_store_close(booking_store *s)
{
    if (!s) return;
    close(s->fd);
    free(s);
}

/* Reads the whole log (the caller holds the flock). NUL-terminated, or NULL
 * with errno set. The demo's log is a few kB: simplicity beats an index. */
static char *read_log(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0) return NULL;
    size_t size = (size_t)st.st_size, got = 0;
    char *buf = malloc(size + 1);
    if (!buf) return NULL;
    while (got < size) {
        ssize_t n = pread(fd, buf + got, size - got, (off_t)got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; /* shorter than fstat said: use what is there */
        got += (size_t)n;
    }
    buf[got] = '\0';
    return buf;
}

static int scan_table(int fd, const char *table, struct table_state *ts)
{
    memset(ts, 0, sizeof *ts);
    char *log = read_log(fd);
    if (!log) return -1;
    char *save = NULL;
    for (char *line = strtok_r(log, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char kind[16], t[BOOKING_NAME_MAX + 1], guest[BOOKING_NAME_MAX + 1];
        uint64_t fence;
        if (sscanf(line, "%15s %32s %32s %" SCNu64, kind, t, guest, &fence) != 4) continue;
        if (strcmp(t, table) != 0 || strcmp(kind, "REFUSED") == 0) continue;
        /* BOOKED, TAKEN and SEEN were all operations the store let through:
         * their fences are the ones it has seen. */
        if (fence > ts->max_fence) ts->max_fence = fence;
        if (strcmp(kind, "BOOKED") == 0 && ts->booked++ == 0) strcpy(ts->first, guest);
    }
    free(log);
    return 0;
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* One transaction: flock held from the first read to the last write. */
static int lock_file(int fd)
{
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) return -1;
    }
    return 0;
}

static int append(booking_store *s, const char *fmt, ...)
{
    char rec[4 * BOOKING_NAME_MAX + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rec, sizeof rec, fmt, ap);
    va_end(ap);
    return write_all(s->fd, rec, strlen(rec));
}

/* The checks every fenced operation makes, in its transaction: a lower fence
 * than the store has seen is refused (and logged), otherwise a booked table
 * is TAKEN. BOOKING_FREE, BOOKING_TAKEN, BOOKING_STALE or -1. */
static int check(booking_store *s, const char *table, const char *guest, uint64_t fence,
                 const struct table_state *ts, char *holder, size_t holder_size,
                 uint64_t *store_fence)
{
    if (fence < ts->max_fence) {
        if (store_fence) *store_fence = ts->max_fence;
        if (append(s, "REFUSED %s %s %" PRIu64 " %s %" PRIu64 "\n", table, guest, fence,
                   s->writer, ts->max_fence) != 0)
            return -1;
        return BOOKING_STALE;
    }
    if (ts->booked) {
        if (holder) snprintf(holder, holder_size, "%s", ts->first);
        return BOOKING_TAKEN;
    }
    return BOOKING_FREE;
}

int booking_store_lookup(booking_store *s, const char *table, uint64_t fence, char *guest,
                         size_t guest_size, uint64_t *store_fence)
{
    struct table_state ts;
    if (lock_file(s->fd) != 0) return -1;
    int rc = scan_table(s->fd, table, &ts);
    if (rc == 0) rc = check(s, table, "-", fence, &ts, guest, guest_size, store_fence);
    /* Remember a higher fence: from now on the previous holder's late write
     * is refused, even before this caller writes. */
    if (rc >= 0 && rc != BOOKING_STALE && fence > ts.max_fence &&
        append(s, "SEEN %s - %" PRIu64 " %s\n", table, fence, s->writer) != 0)
        rc = -1;
    flock(s->fd, LOCK_UN);
    return rc;
}

int booking_store_book(booking_store *s, const char *table, const char *guest, uint64_t fence,
                       char *holder, size_t holder_size, uint64_t *store_fence)
{
    struct table_state ts;
    if (lock_file(s->fd) != 0) return -1;
    int rc = scan_table(s->fd, table, &ts);
    if (rc == 0) rc = check(s, table, guest, fence, &ts, holder, holder_size, store_fence);
    if (rc == BOOKING_TAKEN &&
        append(s, "TAKEN %s %s %" PRIu64 " %s\n", table, guest, fence, s->writer) != 0)
        rc = -1;
    if (rc == BOOKING_ACCEPTED &&
        append(s, "BOOKED %s %s %" PRIu64 " %s\n", table, guest, fence, s->writer) != 0)
        rc = -1;
    flock(s->fd, LOCK_UN);
    return rc;
}

int booking_store_book_unchecked(booking_store *s, const char *table, const char *guest)
{
    /* No scan, no check: a plain INSERT. The flock only keeps the record in
     * one piece, it does not make the caller's lookup and this one atomic. */
    if (lock_file(s->fd) != 0) return -1;
    int rc = append(s, "BOOKED %s %s 0 %s\n", table, guest, s->writer);
    flock(s->fd, LOCK_UN);
    return rc;
}
