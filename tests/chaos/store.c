/* SPDX-License-Identifier: MIT */
/* store: see store.h. Log lines: "read|write ok|refused W FENCE VALUE". */
#include "store.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

struct state {
    uint64_t counter, highest;
};

static int load(int fd, struct state *s)
{
    char buf[128];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n < 0) return -1;
    buf[n] = '\0';
    if (sscanf(buf, "%" SCNu64 " %" SCNu64, &s->counter, &s->highest) != 2) return -1;
    return 0;
}

static int save(int fd, const struct state *s)
{
    char buf[128];
    int n = snprintf(buf, sizeof buf, "%" PRIu64 " %" PRIu64 "\n", s->counter, s->highest);
    if (pwrite(fd, buf, (size_t)n, 0) != n) return -1;
    return ftruncate(fd, n);
}

static int append_log(const char *path, const char *op, int status, int worker, uint64_t fence,
                      uint64_t value)
{
    char logpath[4096];
    snprintf(logpath, sizeof logpath, "%s.log", path);
    FILE *f = fopen(logpath, "a");
    if (!f) return -1;
    fprintf(f, "%s %s %d %" PRIu64 " %" PRIu64 "\n", op, status == STORE_OK ? "ok" : "refused",
            worker, fence, value);
    return fclose(f);
}

/* One operation under the file lock: a read returns the counter, a write
 * sets it; both first check and raise the highest fence seen. */
static int operate(const char *path, int is_write, int worker, uint64_t fence, uint64_t *value)
{
    int fd = open(path, O_RDWR);
    if (fd < 0) return STORE_ERROR;
    int rc = STORE_ERROR;
    struct state s;
    if (flock(fd, LOCK_EX) != 0) goto out;
    if (load(fd, &s) != 0) goto unlock;
    if (fence < s.highest) {
        rc = STORE_REFUSED;
    } else {
        s.highest = fence;
        if (is_write) s.counter = *value;
        else *value = s.counter;
        if (save(fd, &s) != 0) goto unlock;
        rc = STORE_OK;
    }
    if (append_log(path, is_write ? "write" : "read", rc, worker, fence,
                   rc == STORE_OK || is_write ? *value : 0) != 0)
        rc = STORE_ERROR;
unlock:
    flock(fd, LOCK_UN);
out:
    close(fd);
    return rc;
}

int store_read(const char *path, int worker, uint64_t fence, uint64_t *counter)
{
    return operate(path, 0, worker, fence, counter);
}

int store_write(const char *path, int worker, uint64_t fence, uint64_t value)
{
    return operate(path, 1, worker, fence, &value);
}
