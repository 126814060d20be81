/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "signals.h"

/* Passed on to COMMAND. SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and
 * SIGUSR2 would end redlease by default, so while it waits for the lock
 * they end the wait; SIGWINCH is only passed on. SIGCHLD is libev's. */
static const int caught[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};
static const char *const caught_names[] = {"SIGINT",  "SIGTERM", "SIGHUP",  "SIGQUIT",
                                           "SIGUSR1", "SIGUSR2", "SIGWINCH"};
#define NCAUGHT (sizeof caught / sizeof caught[0])

static struct sigaction saved[NCAUGHT];
static int installed[NCAUGHT];
static volatile sig_atomic_t pending[NCAUGHT]; /* enum cli_signal_origin mask */
static sigset_t start_mask, caught_set, mask_before_block;
static struct ev_loop *sig_loop;
static ev_async wakeup;
static cli_signal_fn sig_fn;
static void *sig_arg;
static int sigpipe_was_ignored;

static void on_signal(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    int saved_errno = errno;
    for (size_t i = 0; i < NCAUGHT; i++) {
        if (caught[i] != sig) continue;
        /* SI_USER, SI_QUEUE, SI_TKILL... are <= 0; the tty driver's are not. */
        pending[i] |= si && si->si_code <= 0 ? CLI_SIG_FROM_PROCESS : CLI_SIG_FROM_KERNEL;
    }
    ev_async_send(sig_loop, &wakeup);
    errno = saved_errno;
}

static void on_wakeup(struct ev_loop *loop, ev_async *w, int revents)
{
    (void)loop, (void)w, (void)revents;
    for (size_t i = 0; i < NCAUGHT; i++) {
        if (!pending[i]) continue;
        /* Read and clear with the signal blocked: none is lost in between. */
        sigset_t one, old;
        sigemptyset(&one);
        sigaddset(&one, caught[i]);
        sigprocmask(SIG_BLOCK, &one, &old);
        int origin = pending[i];
        pending[i] = 0;
        sigprocmask(SIG_SETMASK, &old, NULL);
        sig_fn(caught[i], origin, sig_arg);
    }
}

/* SIG_DFL or SIG_IGN for sig; old may be NULL. Async-signal-safe. */
static int set_disposition(int sig, void (*handler)(int), struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    return sigaction(sig, &sa, old);
}

void cli_signals_ignore_sigpipe(void)
{
    struct sigaction old;
    if (set_disposition(SIGPIPE, SIG_IGN, &old) == 0) sigpipe_was_ignored = old.sa_handler == SIG_IGN;
}

void cli_signals_init(void) { sigprocmask(SIG_SETMASK, NULL, &start_mask); }

int cli_signals_start(struct ev_loop *loop, cli_signal_fn fn, void *arg)
{
    sig_loop = loop;
    sig_fn = fn;
    sig_arg = arg;
    sigemptyset(&caught_set);
    ev_async_init(&wakeup, on_wakeup);
    ev_async_start(loop, &wakeup);
    ev_unref(loop); /* the signal watcher alone does not keep the loop running */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    for (size_t i = 0; i < NCAUGHT; i++) {
        if (sigaction(caught[i], NULL, &saved[i]) != 0) return -1;
        if (saved[i].sa_handler == SIG_IGN) continue;
        if (sigaction(caught[i], &sa, NULL) != 0) return -1;
        installed[i] = 1;
        sigaddset(&caught_set, caught[i]);
    }
    return 0;
}

void cli_signals_stop(void)
{
    for (size_t i = 0; i < NCAUGHT; i++) {
        if (installed[i]) sigaction(caught[i], &saved[i], NULL);
        installed[i] = 0;
    }
    if (sig_loop) {
        ev_ref(sig_loop);
        ev_async_stop(sig_loop, &wakeup);
        sig_loop = NULL;
    }
}

void cli_signals_reset_in_child(void)
{
    for (size_t i = 0; i < NCAUGHT; i++)
        if (installed[i]) sigaction(caught[i], &saved[i], NULL);
    if (!sigpipe_was_ignored) set_disposition(SIGPIPE, SIG_DFL, NULL);
    sigprocmask(SIG_SETMASK, &start_mask, NULL);
}

int cli_signal_is_passed_on_death(int sig)
{
    return sig == SIGINT || sig == SIGQUIT || sig == SIGTERM || sig == SIGHUP;
}

void cli_signals_die_of(int sig)
{
    set_disposition(sig, SIG_DFL, NULL);
    if (sig == SIGQUIT) { /* COMMAND dumped core, if it did; redlease's is of no use */
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
    }
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
}

void cli_signals_block(void) { sigprocmask(SIG_BLOCK, &caught_set, &mask_before_block); }

void cli_signals_unblock(void) { sigprocmask(SIG_SETMASK, &mask_before_block, NULL); }

int cli_signal_cancels_wait(int sig) { return sig != SIGWINCH; }

const char *cli_signal_name(int sig)
{
    static char other[24];
    for (size_t i = 0; i < NCAUGHT; i++)
        if (caught[i] == sig) return caught_names[i];
    snprintf(other, sizeof other, "signal %d", sig);
    return other;
}
