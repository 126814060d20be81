/* SPDX-License-Identifier: MIT */
/* Fuzz target: the model check of the core (tests/support/model.c) with the
 * fuzzer choosing every step instead of test_model's PRNG, so coverage
 * steers the sequence of acquires and their options, releases (also from
 * the event hook), the model's Redis running commands and, separately,
 * the library reading their replies, time passing, clock jumps before the
 * timer runs, broken connections, reconnects, NOSCRIPT phases, error
 * replies, competitors, keys wiped (restart, eviction of a lock key, a
 * queue's key or a semaphore's), a server clock running fast by the
 * drift, the queue's side (leases in the three wait modes, the subscriber
 * link connecting, subscribed or refused, words pushed and read late or
 * lost with a broken link, strangers queued, forged words, the server's
 * TIME stepped), the semaphore's (resources that are counting semaphores,
 * leases of weights up to their limit, now and then of the other kind),
 * shared/exclusive resources (shared holders beside mutexes, their
 * exclusive holders; shared waiters in the queue, reminded), handles with
 * re-entry joining another handle's lease, and the client closed or freed
 * with live leases; the library's backoff jitter
 * comes from the input too.
 *
 * The input is the stream of choices (model.h, model_choice_bytes()): a
 * choice among n takes one byte if n <= 256, else two (big-endian), taken
 * modulo n; the jitter takes four. When the input is used up the steps
 * stop and the run goes straight to the drain (every further choice is 0).
 * test_model SEEDS FIRST DIR records PRNG seeds in this encoding: that is
 * how the seed corpus was made (tests/unit/test_model 8 1 DIR).
 *
 * Checked (abort after printing what, so libFuzzer records the input):
 * everything model.c checks: held() implies the model's key holds our
 * token (after a wipe: until the deadline that commands run before it
 * could give), the link is up and the reported deadline is ahead; a lease
 * told it holds never sees the key hold another token; confirmations in
 * time; a semaphore's or shared holders counted by the server until
 * their local deadline, never more weight believed held than the limit,
 * never an exclusive holder beside a shared one, each command of its
 * lease's kind, fences increasing, the handles of one lease (re-entry)
 * one holder that each sees alike and is each told of a loss, its key
 * deleted only by the last one's release, EKIND when a live attempt was
 * answered KIND; losses and statuses explained by the replies; the
 * callbacks' count and order, also at close and free; words for tokens
 * that wait for nothing find no waiter; in the quiet phase no free lock
 * left with a waiter, no lock handed to a waiter and left, no shared
 * waiter kept out with the way open; at the end no key, queue entry or
 * holder left by a failed acquire, every release answered, no handle and
 * no allocation left. The seed corpus was re-recorded once shared
 * holders were modelled, and again once re-entry was
 * (tests/unit/test_model 8 1 tests/fuzz/corpus/fuzz_model), so its inputs
 * reach the queue, the semaphore, shared holders and joins; an input recorded before a change of the
 * choices still runs, as another program. */
#include <stdio.h>
#include <stdlib.h>

#include "fake.h"
#include "fuzz_input.h"
#include "model.h"

#define MAX_STEPS 400 /* keeps each run short whatever the input */

static uint32_t take(fuzz_input *in, int bytes)
{
    uint32_t v = 0;
    for (int i = 0; i < bytes; i++) v = v << 8 | take_u8(in);
    return v;
}

static uint32_t choose(void *ctx, uint32_t n) { return take(ctx, model_choice_bytes(n)) % n; }
static uint32_t bits(void *ctx) { return take(ctx, MODEL_BITS_BYTES); }
static int more(void *ctx) { return fuzz_left(ctx); }

static void violated(void *ctx, const char *what)
{
    (void)ctx;
    fprintf(stderr, "fuzz_model: violated: %s\n", what);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int installed;
    if (!installed) {
        fake_alloc_install();
        installed = 1;
    }
    fuzz_input in = {data, size};
    model_driver d = {choose, bits, more, violated, &in, MAX_STEPS};
    model_run(&d);
    return 0;
}
