/* SPDX-License-Identifier: MIT */
/* A randomized model check of the core: the model of model.c (what one
 * program does and what it checks is said there), its choices drawn from
 * a PRNG, one program of 200 steps per seed. A failure prints its seed;
 * `test_model SEEDS FIRST` replays. `test_model SEEDS FIRST DIR` also
 * writes each seed's choices to DIR/seed-N as an input of the fuzz target
 * tests/fuzz/fuzz_model.c (how its seed corpus was made). A second case
 * prints what the seeds reached (late replies, losses by reason, error
 * replies, wipes, closes, frees; the queue's takes, hand-overs, wake-ups,
 * dead entries, waiters placed again, words read, found, lost and forged,
 * refused subscriptions, free locks served in the quiet phase; the
 * semaphore's admissions, reclaims, full answers, pruned holders,
 * releases and holders excused after their count went; shared holders
 * admitted, reclaimed, kept out by an exclusive holder or waiter, released,
 * exclusive acquires that found them, locks they handed to an exclusive
 * head, shared heads reminded, shared holders excused after a key lost;
 * acquires refused as another kind, every way; fences checked; re-entry:
 * joins, after attempts of their own, started while the lease was being
 * acquired and to a lease whose first handle was released, releases with
 * the lease held on by another handle and last releases, each both ways,
 * joined handles lost by every reason) and fails
 * if any of it was never reached (with 500 seeds or more). */
#include <stdio.h>
#include <stdlib.h>

#include "testutil.h"
#include "fake.h"
#include "model.h"

typedef struct prng {
    uint64_t s;
    long seed;
    FILE *record; /* or NULL */
} prng;

static uint32_t rnd(prng *p)
{
    p->s ^= p->s << 13;
    p->s ^= p->s >> 7;
    p->s ^= p->s << 17;
    return (uint32_t)p->s;
}

static void record(prng *p, uint32_t v, int bytes)
{
    for (int i = bytes - 1; p->record && i >= 0; i--) fputc((int)(v >> (8 * i) & 255), p->record);
}

static uint32_t choose(void *ctx, uint32_t n)
{
    uint32_t v = rnd(ctx) % n;
    record(ctx, v, model_choice_bytes(n));
    return v;
}

static uint32_t bits(void *ctx)
{
    uint32_t v = rnd(ctx);
    record(ctx, v, MODEL_BITS_BYTES);
    return v;
}

static int bad; /* over all seeds: only the first ten are printed */

static void violated(void *ctx, const char *what)
{
    const prng *p = ctx;
    if (bad++ < 10) printf("# seed %ld: %s\n", p->seed, what);
}

static long n_seeds = 5000, first_seed = 1;
static const char *record_dir;

static void run_seed(long seed)
{
    prng p = {(uint64_t)seed * 2654435761u + 1, seed, NULL};
    if (record_dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/seed-%ld", record_dir, seed);
        p.record = fopen(path, "wb");
        if (!p.record) {
            printf("# cannot write %s\n", path);
            bad++;
            return;
        }
    }
    model_driver d = {choose, bits, NULL, violated, &p, 200};
    model_run(&d);
    if (p.record && fclose(p.record) != 0) {
        printf("# cannot write the record of seed %ld\n", seed);
        bad++;
    }
}

static void test_model_seeds(void)
{
    bad = 0;
    for (long s = first_seed; s < first_seed + n_seeds && bad == 0; s++) run_seed(s);
    printf("# %ld seeds from %ld, %d violations\n", n_seeds, first_seed, bad);
    CHECK_EQ(bad, 0);
}

/* The seeds reached every path the model was widened for; a model that
 * quietly stopped reaching one would check nothing there. */
static void test_model_reaches(void)
{
    const model_reach *m = &model_reached;
    printf("# lost: %ld expired, %ld not owner, %ld max hold, %ld closed\n",
           m->lost[REDLEASE_LOST_EXPIRED], m->lost[REDLEASE_LOST_NOT_OWNER],
           m->lost[REDLEASE_LOST_MAX_HOLD], m->lost[REDLEASE_LOST_CLOSED]);
    printf("# late replies read: %ld acquire OKs, %ld renewals\n", m->late_acquire_ok,
           m->late_renewal);
    printf("# error replies %ld: on_acquire(EREDIS) %ld, renewals failed by EREDIS %ld\n",
           m->error_replies, m->acquire_eredis, m->renew_eredis);
    printf("# keys wiped %ld times; held() on a wiped key (excused) %ld times\n", m->wipes,
           m->held_on_wiped);
    printf("# clients closed %ld, freed with live handles %ld, freed while closing %ld\n", m->closes,
           m->frees_live, m->frees_closing);
    printf("# conditional commands run %ld, refused %ld\n", m->native_commands, m->native_refused);
    printf("# queue: %ld takes, %ld handovers (%ld heard), %ld unordered wake-ups, %ld releases with nobody "
           "queued\n",
           m->queue_takes, m->handovers, m->handovers_heard, m->unordered_wakes, m->fast_releases);
    printf("# queue: %ld release probes, %ld of them found a queue\n", m->release_probes,
           m->probes_refused);
    printf("# queue: %ld dead entries dropped, %ld waiters placed again after losing their place\n",
           m->entries_expired, m->rejoined);
    printf("# words: %ld read (%ld found their waiter), %ld lost, %ld forged; %ld subscriptions refused\n",
           m->words_delivered, m->words_found, m->words_lost, m->forged_words, m->subscribe_refused);
    printf("# quiet phase: %ld free locks taken with a handle waiting, %ld \"g\" read by a waiter, %ld shared "
           "holders entered with the way open\n",
           m->quiet_served, m->quiet_granted, m->quiet_entered);
    printf("# semaphore: %ld admitted (%ld reclaimed), %ld full, %ld behind a waiter, %ld heads woken, "
           "%ld pruned, %ld released; %ld held with their count gone (excused)\n",
           m->sem_admitted, m->sem_reclaimed, m->sem_full, m->sem_behind, m->sem_wakes, m->sem_pruned,
           m->sem_released, m->sem_excused);
    printf("# shared: %ld admitted (%ld reclaimed), %ld beside an exclusive holder, %ld behind an exclusive "
           "waiter, %ld released; %ld exclusive acquires found them, %ld locks handed to an exclusive head, %ld "
           "shared heads reminded; %ld held with their set or kind gone (excused)\n",
           m->shared_admitted, m->shared_reclaimed, m->shared_busy, m->shared_behind, m->shared_released,
           m->excl_on_shared, m->shared_handed, m->shared_reminded, m->shared_excused);
    printf("# kinds: %ld mutex, %ld semaphore (%ld of them on shared holders) and %ld shared acquires answered "
           "KIND, %ld on_acquire(EKIND); %ld fences in order\n",
           m->kind_refused[0], m->kind_refused[1], m->sem_on_shared, m->kind_refused[2], m->acquire_ekind,
           m->fences_checked);
    printf("# re-entry: %ld joins (%ld after attempts of their own, %ld started while the lease was being "
           "acquired, %ld to a lease its first handle's user had released); releases with the lease held on: "
           "%ld joined handles', %ld first handles'; last releases: %ld by a joined handle, %ld by the first\n",
           m->joins, m->joins_waited, m->joins_raced, m->joins_carried, m->joined_early[0], m->joined_early[1],
           m->joined_last[0], m->joined_last[1]);
    printf("# re-entry: joined handles lost: %ld expired, %ld not owner, %ld max hold, %ld closed\n",
           m->joined_lost[REDLEASE_LOST_EXPIRED], m->joined_lost[REDLEASE_LOST_NOT_OWNER],
           m->joined_lost[REDLEASE_LOST_MAX_HOLD], m->joined_lost[REDLEASE_LOST_CLOSED]);
    if (n_seeds < 500) SKIP_TEST("fewer than 500 seeds");
    if (bad) SKIP_TEST("the seeds stopped at a violation");
    for (int r = REDLEASE_LOST_EXPIRED; r <= REDLEASE_LOST_CLOSED; r++) CHECK(m->lost[r] > 0);
    CHECK(m->late_acquire_ok > 0);
    CHECK(m->late_renewal > 0);
    CHECK(m->acquire_eredis > 0);
    CHECK(m->renew_eredis > 0);
    CHECK(m->held_on_wiped > 0);
    CHECK(m->closes > 0);
    CHECK(m->frees_live > 0);
    CHECK(m->frees_closing > 0);
    CHECK(m->native_commands > 0);
    CHECK(m->native_refused > 0);
    CHECK(m->queue_takes > 0);
    CHECK(m->handovers > 0);
    CHECK(m->handovers_heard > 0 && m->handovers_heard < m->handovers); /* both kinds of insurance */
    CHECK(m->unordered_wakes > 0);
    CHECK(m->fast_releases > 0);
    CHECK(m->release_probes > 0);
    CHECK(m->probes_refused > 0);
    CHECK(m->entries_expired > 0);
    CHECK(m->rejoined > 0);
    CHECK(m->words_delivered > 0);
    CHECK(m->words_found > 0);
    CHECK(m->words_lost > 0);
    CHECK(m->forged_words > 0);
    CHECK(m->subscribe_refused > 0);
    CHECK(m->quiet_served > 0);
    CHECK(m->quiet_granted > 0);
    CHECK(m->quiet_entered > 0);
    CHECK(m->sem_admitted > 0);
    CHECK(m->sem_reclaimed > 0);
    CHECK(m->sem_full > 0);
    CHECK(m->sem_pruned > 0);
    CHECK(m->sem_released > 0);
    CHECK(m->sem_behind > 0);
    CHECK(m->sem_wakes > 0);
    CHECK(m->sem_excused > 0);
    CHECK(m->shared_admitted > 0);
    CHECK(m->shared_reclaimed > 0);
    CHECK(m->shared_busy > 0);
    CHECK(m->shared_behind > 0);
    CHECK(m->shared_released > 0);
    CHECK(m->excl_on_shared > 0);
    CHECK(m->shared_handed > 0);
    CHECK(m->shared_reminded > 0);
    CHECK(m->shared_excused > 0);
    CHECK(m->kind_refused[0] > 0 && m->kind_refused[1] > 0 && m->kind_refused[2] > 0); /* every way */
    CHECK(m->sem_on_shared > 0);
    CHECK(m->acquire_ekind > 0);
    CHECK(m->fences_checked > 0);
    CHECK(m->joins > 0);
    CHECK(m->joins_waited > 0);
    CHECK(m->joins_raced > 0);
    CHECK(m->joins_carried > 0);
    CHECK(m->joined_early[0] > 0 && m->joined_early[1] > 0); /* releases in either order */
    CHECK(m->joined_last[0] > 0 && m->joined_last[1] > 0);
    for (int r = REDLEASE_LOST_EXPIRED; r <= REDLEASE_LOST_CLOSED; r++) CHECK(m->joined_lost[r] > 0);
}

int main(int argc, char **argv)
{
    if (argc > 1) n_seeds = atol(argv[1]);
    if (argc > 2) first_seed = atol(argv[2]);
    if (argc > 3) record_dir = argv[3];
    if (getenv("REDLEASE_MODEL_SEEDS")) n_seeds = atol(getenv("REDLEASE_MODEL_SEEDS"));
    fake_alloc_install();
    static const test_case tests[] = {TEST_CASE(test_model_seeds), TEST_CASE(test_model_reaches)};
    return run_tests(tests, 2, 0, NULL);
}
