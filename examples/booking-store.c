/* booking-store: see booking-store.h. */
#define _DEFAULT_SOURCE /* flock */
#include "booking-store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
    int booked;                          /* accepted bookings */
    char first[BOOKING_NAME_MAX + 1];    /* guest of the first one */
    uint64_t max_fence;                  /* highest accepted fence */
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
        if (strcmp(kind, "BOOKED") != 0 || strcmp(t, table) != 0) continue;
        if (ts->booked++ == 0) strcpy(ts->first, guest);
        if (fence > ts->max_fence) ts->max_fence = fence;
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
static int lock_file(int fd, int how)
{
    while (flock(fd, how) != 0) {
        if (errno != EINTR) return -1;
    }
    return 0;
}

int booking_store_lookup(booking_store *s, const char *table, char *guest, size_t guest_size)
{
    struct table_state ts;
    if (lock_file(s->fd, LOCK_SH) != 0) return -1;
    int rc = scan_table(s->fd, table, &ts);
    flock(s->fd, LOCK_UN);
    if (rc != 0) return -1;
    if (!ts.booked) return 0;
    snprintf(guest, guest_size, "%s", ts.first);
    return 1;
}

int booking_store_book(booking_store *s, const char *table, const char *guest, uint64_t fence,
                       uint64_t *store_fence)
{
    struct table_state ts;
    char rec[4 * BOOKING_NAME_MAX + 64];
    if (lock_file(s->fd, LOCK_EX) != 0) return -1;
    int rc = scan_table(s->fd, table, &ts);
    if (rc == 0) {
        rc = fence < ts.max_fence ? BOOKING_STALE : BOOKING_ACCEPTED;
        if (rc == BOOKING_STALE)
            snprintf(rec, sizeof rec, "REFUSED %s %s %" PRIu64 " %s %" PRIu64 "\n", table, guest,
                     fence, s->writer, ts.max_fence);
        else
            snprintf(rec, sizeof rec, "BOOKED %s %s %" PRIu64 " %s\n", table, guest, fence,
                     s->writer);
        if (write_all(s->fd, rec, strlen(rec)) != 0) rc = -1;
    }
    flock(s->fd, LOCK_UN);
    if (store_fence) *store_fence = rc == BOOKING_STALE ? ts.max_fence : fence;
    return rc;
}
