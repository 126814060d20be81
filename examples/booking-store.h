/* booking-store: the demo's shared "database" of table bookings.
 *
 * One text file shared by every booking-server process. Each operation takes
 * flock(2) on the file for its whole duration, so each one is atomic on its
 * own, like one database transaction. Nothing makes "look the table up, then
 * book it" atomic: that gap is where double bookings come from, and what a
 * distributed lock closes.
 *
 * The store also does the fencing check (Kleppmann): per table it knows the
 * highest fencing token of an accepted booking, and refuses a write whose
 * token is lower. A writer without a lock passes fence 0 (never refused
 * while nobody fenced wrote that table).
 *
 * The file is an append-only log, one line per write attempt, read by the
 * demo to count what happened:
 *     BOOKED  <table> <guest> <fence> <server>
 *     REFUSED <table> <guest> <fence> <server> <highest accepted fence>
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
    BOOKING_ACCEPTED = 0,
    BOOKING_STALE = 1 /* refused: a higher fence already wrote this table */
};

/* 1 if name is a non-empty [A-Za-z0-9_-] word of at most BOOKING_NAME_MAX. */
int booking_name_ok(const char *name);

/* Opens (creating it if needed) the store file; writer names this process in
 * the records. 0, or -1 with errno set. */
int booking_store_open(booking_store **out, const char *path, const char *writer);
void booking_store_close(booking_store *s);

/* Who holds table: 1 and the guest of its first accepted booking copied to
 * guest (guest_size > BOOKING_NAME_MAX), 0 if free, -1 on an I/O error. */
int booking_store_lookup(booking_store *s, const char *table, char *guest, size_t guest_size);

/* Writes a booking of table for guest with fencing token fence: returns
 * BOOKING_ACCEPTED, BOOKING_STALE (and *store_fence, the highest accepted
 * fence, is higher than fence), or -1 on an I/O error. store_fence may be
 * NULL. It does not check whether the table is free: that is the caller's
 * lookup, a separate transaction. */
int booking_store_book(booking_store *s, const char *table, const char *guest, uint64_t fence,
                       uint64_t *store_fence);

#endif
