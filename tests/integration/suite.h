/* SPDX-License-Identifier: MIT */
/* What the files of the integration suite share: the harness's server and
 * its admin connection, the loop, the holder (each defined, and said what
 * it does, in suite.c), and the cases of suite_leases.c and
 * suite_adapter.c that suite.c runs. */
#ifndef REDLEASE_SUITE_H
#define REDLEASE_SUITE_H
#include <stdint.h>

#include <hiredis/hiredis.h>
#include <redlease.h>

#include "testloop.h"
#include "testutil.h"

extern const char *sock_path; /* the harness's server, REDLEASE_TEST_SOCKET */
extern int tls_port;          /* 0, or the suite runs over TLS (tls-NAME.itest) */

int64_t mono_ms(void);

/* the admin */
redisContext *admin(void);
redisReply *cmd(const char *fmt, ...);
void cmd_free(const char *fmt, const char *arg);
const char *key_of(const char *resource, int kind);
const char *get(const char *key);
int redis_at_least(int major, int minor);
long long pttl(const char *key);
void send_nowait(const char *c);

/* the loop; the durations the cases wait for something are multiplied by
 * slowness (scale.h: 1 for a plain build), the command timeout too */
extern int64_t slowness;
int run_until(volatile int *flag, int64_t ms);
void run_for(int64_t ms);
/* One turn of the loop (testloop_run_once(ms)). Since turns_watch(),
 * longest_turn is the longest time from a turn's start to the next one's
 * (or to its own end): how late a starved machine made the loop, the
 * margin of a check that something happened "in time". */
void turn(int ms);
void turns_watch(void);
extern int64_t longest_turn;

/* the holder */

typedef struct holder {
    redlease_client *c;
    redlease_lock *lk;
    int acquired, acq_status;
    int lost, lost_reason;
    int released, rel_status;
    int64_t t_call, t_acq, t_lost, t_rel;
    uint64_t fence;
    int acted; /* critical section entered while held */
} holder;

void h_acq(redlease_lock *lk, int st, void *arg);
void h_lost(redlease_lock *lk, int reason, void *arg);
void h_rel(redlease_lock *lk, int st, void *arg);
redlease_client *client_tcp(int tcp);
redlease_client *client(void);
int wait_connected(redlease_client *c);
void acquire(holder *h, const char *res, redlease_lock_options o);
void release(holder *h);
redlease_lock_options lopts(int64_t ttl, int64_t wait);
int loop_empties(void);
void free_and_check_loop_empty(redlease_client *c);

/* The cases, in the order suite.c runs them. */
void test_sequential_holders(void);
void test_concurrent_race_one_winner(void);
void test_holder_that_never_releases_is_replaced(void);
void test_renewal_keeps_lease_past_ttls(void);
void test_semaphore_and_shared_on_this_loop(void);
void test_key_deleted_or_overwritten_is_not_owner(void);
void test_frozen_server_expired_before_server_expiry(void);
void test_paused_server_loss_heard_before_key_expires(void);
void test_client_kill_reconnects_and_keeps_lease(void);
void test_fencing_tokens_strictly_increase(void);
void test_script_flush_falls_back_to_eval(void);
void test_tcp_and_cancel_in_flight(void);
void test_auth_and_wrong_password(void);
void test_graceful_close_deletes_keys(void);
void test_conditional_commands_where_the_server_has_them(void);
void test_timer_precision_and_rearm(void);
void test_callbacks_run_from_the_read(void);
void test_adapter_timer_contract(void);
void test_free_inside_callbacks(void);
void test_reset_by_peer_noticed_at_once(void);
void test_peer_gone_before_write_does_not_kill(void);
void test_peer_stops_reading_after_handshake_does_not_kill(void);

#endif
