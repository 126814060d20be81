/* SPDX-License-Identifier: MIT */
/* Replays a fuzz target's corpus without libFuzzer: a main() that runs
 * LLVMFuzzerTestOneInput once on every file of the given directories, so
 * make check (gcc, ASan, valgrind builds) keeps every seed and every input
 * the fuzzer found as a regression test. A target reports a violation by
 * aborting; this prints one TAP case for the whole corpus.
 *
 * usage: replay NAME DIR... */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs one file; -1 if it cannot be read. */
static int replay_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return -1;
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, fp)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *bigger = realloc(buf, cap *= 2);
            if (!bigger) free(buf);
            buf = bigger;
        }
    }
    int bad = !buf || ferror(fp);
    fclose(fp);
    if (!bad) {
        printf("# %s (%zu bytes)\n", path, n);
        fflush(stdout); /* an abort in the target must not eat the name */
        LLVMFuzzerTestOneInput(buf, n);
    }
    free(buf);
    return bad ? -1 : 0;
}

/* Replays every regular file of dir; the count, or -1 on an error. */
static long replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    long count = 0;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (replay_file(path) != 0) {
            count = -1;
            break;
        }
        count++;
    }
    closedir(d);
    return count;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s NAME DIR...\n", argv[0]);
        return 2;
    }
    printf("1..1\n");
    long total = 0;
    for (int i = 2; i < argc; i++) {
        long n = replay_dir(argv[i]);
        if (n < 0) {
            printf("not ok 1 - %s: cannot read %s\n", argv[1], argv[i]);
            return 1;
        }
        total += n;
    }
    /* An empty corpus would make this test pass without testing anything. */
    printf("%s 1 - %s: %ld inputs replayed\n", total ? "ok" : "not ok", argv[1], total);
    return total ? 0 : 1;
}
