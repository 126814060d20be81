/* SPDX-License-Identifier: MIT */
/* booking-store: the demo's shared "database" of table bookings.
 *
 * One text file shared by every booking-server process. Each operation takes
 * flock(2) LOCK_EX on the file for its whole duration, so each one is atomic
 * on its own, like one database transaction.
 *
 * Like a real database with a unique key and a fencing column, the store
 * protects itself in two ways:
 *  - a booking is "insert if absent": booking_store_book() refuses, in the
 *    same transaction, a table that is already booked (TAKEN);
 *  - fencing (Kleppmann): per table the store remembers the highest fencing
 *    token it has seen on any operation, a lookup included, and refuses a
 *    lookup or a booking whose token is lower (STALE). A holder that lost its
 *    lease cannot write after the new holder has looked the table up, even
 *    before the new holder has written.
 * A writer without a lock passes fence 0 (never refused while nobody fenced
 * touched that table).
 *
 * booking_store_book_unchecked() is the naive application's plain INSERT,
 * with neither check: the demo's no-lock baseline ("look up, work, insert").
 * Nothing makes its lookup and its insert one transaction: that gap is where
 * double bookings come from, and what a distributed lock closes.
 *
 * The file is an append-only log, one line per write attempt or fenced
 * lookup, read by the demo to count what happened:
 *     BOOKED  <table> <guest> <fence> <server>
 *     TAKEN   <table> <guest> <fence> <server>     refused: already booked
 *     REFUSED <table> <guest> <fence> <server> <highest fence seen>
 *     SEEN    <table> - <fence> <server>           a lookup raised the fence
 * Two BOOKED lines for one table are a double booking.
 */
#ifndef BOOKING_STORE_H
#define BOOKING_STORE_H

#include <stddef.h>
#include <stdint.h>

/* Longest table, guest or server name (bytes); names are [A-Za-z0-9_-]. */
#define BOOKING_NAME_MAX 32

typedef struct booking_store booking_store;

enum booking_result {
    BOOKING_FREE = 0,     /* lookup: nobody has booked the table */
    BOOKING_ACCEPTED = 0, /* book: written */
    BOOKING_TAKEN = 1,    /* already booked (guest says by whom) */
    BOOKING_STALE = 2     /* refused: the store has seen a higher fence for this table */
};

/* 1 if name is a non-empty [A-Za-z0-9_-] word of at most BOOKING_NAME_MAX. */
int booking_name_ok(const char *name);

/* Opens (creating it if needed) the store file; writer names this process in
 * the records. 0, or -1 with errno set. */
int booking_store_open(booking_store **out, const char *path, const char *writer);
void booking_store_close(booking_store *s);

/* The results below: guest (guest_size > BOOKING_NAME_MAX, may be NULL) gets
 * the guest of the table's first booking for BOOKING_TAKEN; store_fence (may
 * be NULL) gets the highest fence the store has seen for the table for
 * BOOKING_STALE. -1 is an I/O error (errno set). */

/* Is table free? Made with fencing token fence, which the store remembers
 * (a lower one is refused from then on): BOOKING_FREE, BOOKING_TAKEN,
 * BOOKING_STALE or -1. */
int booking_store_lookup(booking_store *s, const char *table, uint64_t fence, char *guest,
                         size_t guest_size, uint64_t *store_fence);

/* Books table for guest if it is free and fence is not stale, in one
 * transaction: BOOKING_ACCEPTED, BOOKING_TAKEN, BOOKING_STALE or -1. */
int booking_store_book(booking_store *s, const char *table, const char *guest, uint64_t fence,
                       char *holder, size_t holder_size, uint64_t *store_fence);

/* UNSAFE, the no-lock baseline only: appends a booking with no check at all,
 * as a naive application inserts after its own earlier lookup. 0 or -1. */
int booking_store_book_unchecked(booking_store *s, const char *table, const char *guest);

#endif
