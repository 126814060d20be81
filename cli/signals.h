/* SPDX-License-Identifier: MIT */
/* The signals redlease passes on to COMMAND, caught without losing who
 * sent them: a handler (SA_SIGINFO) notes the signal and whether it came
 * from kill()/sigqueue() (si_code <= 0) or from the kernel (a terminal's ^C,
 * ^\, a hangup, a resize: sent to the whole foreground process group, so
 * COMMAND got it too), then wakes the loop with ev_async_send(), which is
 * async-signal-safe. Everything else happens on the loop. */
#ifndef REDLEASE_CLI_SIGNALS_H
#define REDLEASE_CLI_SIGNALS_H

#include <signal.h>

#include <ev.h>

/* From a process (forward it) or from the kernel (COMMAND has it). */
enum cli_signal_origin { CLI_SIG_FROM_PROCESS = 1, CLI_SIG_FROM_KERNEL = 2 };

/* Called on the loop once per caught signal: origin is a mask of the above
 * (a signal may arrive both ways before the loop runs). */
typedef void (*cli_signal_fn)(int sig, int origin, void *arg);

/* At the very start of redlease: SIGPIPE ignored, so that a message to a
 * closed pipe is an EPIPE (msg.c stops writing) rather than redlease's
 * death, which would kill COMMAND too (PR_SET_PDEATHSIG). Notes whether it
 * was ignored already: COMMAND gets it back as it was. */
void cli_signals_ignore_sigpipe(void);

/* Notes the signal mask redlease started with, for COMMAND; call it before
 * creating the loop (libev unblocks SIGCHLD). */
void cli_signals_init(void);

/* Installs the handlers and starts the ev_async watcher on loop. Signals
 * ignored when redlease started (nohup, a background job of a
 * non-interactive shell) stay ignored, for COMMAND too. 0 or -1 (errno). */
int cli_signals_start(struct ev_loop *loop, cli_signal_fn fn, void *arg);
/* Restores the dispositions and stops the watcher. */
void cli_signals_stop(void);

/* For a forked child before exec: back to the dispositions (SIGPIPE too)
 * and the mask redlease started with. Async-signal-safe. */
void cli_signals_reset_in_child(void);

/* Blocks the caught signals (around fork, so the child never runs the
 * handler); cli_signals_unblock() restores the mask it found. */
void cli_signals_block(void);
void cli_signals_unblock(void);

/* 1 if sig ends the wait for the lock (its default action would have
 * ended redlease); 0 for those that are only passed on (SIGWINCH). */
int cli_signal_cancels_wait(int sig);

/* 1 for the signals whose death redlease passes on to its caller when
 * COMMAND died of them (INT, QUIT, TERM, HUP): a shell stops a loop or a
 * script on a ^C only if its child died of SIGINT, not if it exited 130. */
int cli_signal_is_passed_on_death(int sig);

/* Dies of sig: its default action, no core file, unblocked, raised. Call
 * it with everything released; returns only if sig did not end redlease. */
void cli_signals_die_of(int sig);

/* "SIGTERM" for the signals above, else "signal N" (static buffer). */
const char *cli_signal_name(int sig);

#endif
