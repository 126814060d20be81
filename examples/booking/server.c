/* SPDX-License-Identifier: MIT */
/* booking-server: a small libev TCP server that books restaurant tables in a
 * shared store (store.h), protecting each table with a redlease lease
 * and writing with the lease's fencing token. `make demo` (examples/booking/demo.sh)
 * runs several of these side by side.
 *
 * Protocol: one request line per connection, one reply line, then close.
 *     BOOK <table> <guest>
 *     -> OK <fence> <waited_ms>       booked (fence 0 with --no-lock)
 *        TAKEN <guest>                the table was already booked
 *        BUSY                         the lock stayed taken for --wait-ms
 *        LOST                         the lease was lost before the write: nothing written
 *        STALE <fence> <store_fence>  the store's fencing check refused the write
 *        ERR <text>                   ERR timeout: no request line within
 *                                     --read-timeout-ms; ERR bad request: a NUL
 *                                     byte in the line
 * The client keeps the connection open until the reply: EOF or a reset before
 * the write drops the request (its lease released, nothing written). A line
 * ended by EOF instead of a newline is taken as the request.
 *
 * Per request: acquire "table:<T>" (fencing, wait budget), look the table up
 * in the store with the fence (the store remembers it), work for --work-ms (a
 * libev timer: the loop keeps serving other requests), check
 * redlease_lock_held(), book with the fence (the store refuses a booked
 * table or a stale fence), release. Each request has its own lock handle, so
 * one server runs many at once.
 *
 *   booking-server --store FILE [--name NAME] [--port N] [--work-ms N]
 *                  [--ttl-ms N] [--wait-ms N] [--read-timeout-ms N]
 *                  [--no-lock] [--unsafe-write-after-loss]
 *
 *   --port 0 (default) takes any free port; the "ready" log line names it.
 *   --read-timeout-ms  10000 by default; 0: wait for the request line forever.
 *   --no-lock          skip redlease: look up, work, then a plain insert with
 *                      no check (booking_store_book_unchecked()), as a naive
 *                      application does: the unsafe baseline.
 *   --unsafe-write-after-loss  DEMO ONLY: when the lease is lost during the
 *                      work, write anyway, as a write already sent before the
 *                      process was paused would still reach the store; the
 *                      store's fencing check must refuse it. A real server
 *                      answers LOST and writes nothing (the default).
 *
 * Redis: REDLEASE_SOCKET, or REDLEASE_HOST / REDLEASE_PORT (example-env.h).
 * Log: one line per event on stdout, "<ms> <name> <text>", which the demo
 * reads. <ms> is CLOCK_MONOTONIC, one clock for every process on the machine
 * (unlike CLOCK_REALTIME it never steps), so the demo can subtract stamps
 * logged by different servers. SIGTERM / SIGINT: answer pending requests "ERR shutting down",
 * release their leases, close the client, exit 0.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <redlease.h>
#include <redlease/libev.h>

#include "store.h"
#include "../example-env.h"

struct config {
    const char *name, *store_path;
    int port;
    int64_t work_ms, ttl_ms, wait_ms, read_timeout_ms;
    int no_lock, unsafe_write_after_loss;
};

/* One BOOK request, from accept to the release of its lease. */
struct request {
    struct request *prev, *next; /* live requests, for shutdown */
    int fd;                      /* -1 once answered or gone */
    ev_io io;                    /* reading the request line, then watching for EOF */
    ev_timer read_timeout;       /* the request line must come within --read-timeout-ms */
    ev_timer work;               /* the simulated work before the write */
    char line[128];
    size_t len;
    int line_ended_by_eof;       /* the client half-closed: nothing more to watch */
    char table[BOOKING_NAME_MAX + 1], guest[BOOKING_NAME_MAX + 1];
    redlease_lock *lk;  /* NULL with --no-lock */
    int64_t started_ms; /* monotonic, when the acquire began */
    int64_t waited_ms;  /* how long the acquire took */
    int lost;           /* on_lost has run */
    int write_when_lost; /* --unsafe-write-after-loss: the write waits for on_lost */
    int rechecking;      /* the lease is unconfirmed (reconnect): work_done looks again */
    int releasing;       /* redlease_release() called: on_released frees it */
};

static struct config cfg = {
    .name = "server", .port = 0, .work_ms = 200, .ttl_ms = 1000, .wait_ms = 5000,
    .read_timeout_ms = 10000,
};
static struct ev_loop *loop;
static redlease_client *client;
static booking_store *store;
static int listen_fd = -1;
static ev_io accept_watcher;
static ev_timer accept_retry; /* out of fds: accepting again after 100 ms */
static int accept_paused;
static ev_signal sigterm_watcher, sigint_watcher;
static struct request live = {.prev = &live, .next = &live};
static int announced_ready;

/* ------------------------------------------------------------------ log */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Stamped with mono_ms(): see "Log" above. */
static void say(const char *fmt, ...)
{
    printf("%lld %s ", (long long)mono_ms(), cfg.name);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

/* ------------------------------------------------------------ accepting */

/* accept() failing for want of fds (or kernel memory) leaves the connection
 * in the backlog, so the listening socket stays readable: retrying at once
 * would spin. Stop watching it until an fd is closed or 100 ms have passed. */
static void pause_accepting(void)
{
    if (accept_paused) return;
    accept_paused = 1;
    ev_io_stop(loop, &accept_watcher);
    ev_timer_set(&accept_retry, 0.1, 0.0);
    ev_timer_start(loop, &accept_retry);
}

static void resume_accepting(void)
{
    if (!accept_paused) return;
    accept_paused = 0;
    ev_timer_stop(loop, &accept_retry);
    if (listen_fd >= 0) ev_io_start(loop, &accept_watcher);
}

static void on_accept_retry(struct ev_loop *l, ev_timer *w, int revents)
{
    (void)l, (void)w, (void)revents;
    resume_accepting();
}

/* ------------------------------------------------------------ requests */

static void request_free(struct request *req)
{
    req->prev->next = req->next;
    req->next->prev = req->prev;
    free(req);
}

static void hang_up(struct request *req)
{
    if (req->fd < 0) return;
    ev_io_stop(loop, &req->io);
    close(req->fd);
    req->fd = -1;
    resume_accepting(); /* an fd came free */
}

/* Sends the one reply line and closes the connection. The reply is short
 * and the socket fresh, so one send() fits its buffer; a client that went
 * away only loses its answer (MSG_NOSIGNAL: no SIGPIPE). */
static void reply(struct request *req, const char *fmt, ...)
{
    if (req->fd < 0) return;
    char buf[160];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if ((size_t)n > sizeof buf - 2) n = sizeof buf - 2;
    buf[n++] = '\n';
    ssize_t sent = send(req->fd, buf, (size_t)n, MSG_NOSIGNAL);
    if (sent < 0)
        say("reply to a request for table %s lost: %s", req->table, strerror(errno));
    else if (sent != n) /* errno is not set by a short send */
        say("reply to a request for table %s cut short: %zd of %d bytes sent", req->table, sent, n);
    hang_up(req);
}

static void on_released(redlease_lock *lk, int status, void *arg)
{
    (void)lk;
    struct request *req = arg;
    /* ENOTHELD after on_lost is what losing a lease means, not news. */
    if (status != REDLEASE_OK && status != REDLEASE_ECANCELED &&
        !(status == REDLEASE_ENOTHELD && req->lost))
        say("table:%s release: %s", req->table, redlease_strerror(status));
    request_free(req);
}

/* The request is answered: stop its work and end its lease (which frees it
 * from on_released), or free it now if it has none. */
static void finish(struct request *req)
{
    ev_io_stop(loop, &req->io);
    ev_timer_stop(loop, &req->read_timeout);
    ev_timer_stop(loop, &req->work);
    if (!req->lk) {
        request_free(req);
        return;
    }
    if (req->releasing) return;
    req->releasing = 1;
    if (redlease_release(req->lk, on_released, req) != REDLEASE_OK) request_free(req);
}

/* Answers a store operation (what: "lookup" or "write") that did not go
 * through: the table is booked (TAKEN), the fence is older than one the
 * store has seen (STALE), or the store failed (rc < 0, errno set). */
static void answer_refusal(struct request *req, const char *what, int rc, const char *holder,
                           uint64_t fence, uint64_t store_fence)
{
    if (rc == BOOKING_TAKEN) {
        say("table:%s %s: already booked for %s", req->table, what, holder);
        reply(req, "TAKEN %s", holder);
    } else if (rc == BOOKING_STALE) {
        say("table:%s %s with fence %" PRIu64 " refused by the store (store has %" PRIu64 ")",
            req->table, what, fence, store_fence);
        reply(req, "STALE %" PRIu64 " %" PRIu64, fence, store_fence);
    } else {
        reply(req, "ERR store: %s", strerror(errno));
    }
}

static void write_booking(struct request *req)
{
    uint64_t fence = req->lk ? redlease_lock_fence(req->lk) : 0, store_fence = 0;
    if (req->lost)
        say("table:%s writing anyway with fence %" PRIu64
            " (--unsafe-write-after-loss: a write sent before the pause)", req->table, fence);
    char holder[BOOKING_NAME_MAX + 1];
    int rc;
    if (cfg.no_lock) /* the naive app: it looked the table up, so it just inserts */
        rc = booking_store_book_unchecked(store, req->table, req->guest) == 0 ? BOOKING_ACCEPTED : -1;
    else
        rc = booking_store_book(store, req->table, req->guest, fence, holder, sizeof holder,
                                &store_fence);
    if (rc == BOOKING_ACCEPTED) {
        say("table:%s booked for %s (fence %" PRIu64 ")", req->table, req->guest, fence);
        reply(req, "OK %" PRIu64 " %lld", fence, (long long)req->waited_ms);
    } else {
        answer_refusal(req, "write", rc, holder, fence, store_fence);
    }
    finish(req);
}

static void work_done(struct ev_loop *l, ev_timer *w, int revents)
{
    (void)l, (void)revents;
    struct request *req = w->data;
    if (req->lk && !redlease_lock_held(req->lk)) { /* never write without the lease */
        if (!req->lost) {
            /* Not lost (no on_lost yet): held() is also 0 while the client
             * reconnects, until a renewal confirms the lease again. Look
             * again in 10 ms; if it expires meanwhile, on_lost comes first. */
            if (!req->rechecking)
                say("table:%s lease not confirmed right now (reconnecting?): waiting to write",
                    req->table);
            req->rechecking = 1;
            ev_timer_set(w, 0.01, 0.0);
            ev_timer_start(loop, w);
            return;
        }
        say("table:%s lease no longer held after the work (redlease_lock_held() = 0)", req->table);
        if (!cfg.unsafe_write_after_loss) {
            reply(req, "LOST");
            finish(req);
            return;
        }
        /* The demo's stale write: let on_lost (due now) report the loss first,
         * so the log tells the story in order; the write goes out either way. */
        if (!req->lost) {
            req->write_when_lost = 1;
            return;
        }
    }
    write_booking(req);
}

/* Under the lease (or without one): is the table free? Then work. */
static void look_up(struct request *req)
{
    char holder[BOOKING_NAME_MAX + 1];
    uint64_t fence = req->lk ? redlease_lock_fence(req->lk) : 0, store_fence = 0;
    int rc = booking_store_lookup(store, req->table, fence, holder, sizeof holder, &store_fence);
    if (rc < 0 || rc == BOOKING_TAKEN || rc == BOOKING_STALE) {
        answer_refusal(req, "lookup", rc, holder, fence, store_fence);
    } else {
        say("table:%s free: working %lld ms before the write", req->table, (long long)cfg.work_ms);
        ev_timer_set(&req->work, (double)cfg.work_ms / 1000.0, 0.0);
        ev_timer_start(loop, &req->work);
        return;
    }
    finish(req);
}

static void on_lost(redlease_lock *lk, int reason, void *arg)
{
    (void)lk;
    struct request *req = arg;
    say("lost lease on table:%s (%s)", req->table, redlease_lost_reason_str(reason));
    req->lost = 1;
    if (req->releasing) return; /* already answered */
    if (req->write_when_lost) {
        write_booking(req);
    } else if (!cfg.unsafe_write_after_loss) { /* stop the work: it may not be written */
        reply(req, "LOST");
        finish(req);
    }
}

static void on_acquired(redlease_lock *lk, int status, void *arg)
{
    struct request *req = arg;
    req->waited_ms = mono_ms() - req->started_ms;
    if (status != REDLEASE_OK) {
        if (status == REDLEASE_EBUSY)
            reply(req, "BUSY");
        else
            reply(req, "ERR lock: %s", redlease_strerror(status));
        finish(req);
        return;
    }
    say("table:%s held (fence %" PRIu64 ", waited %lld ms)", req->table, redlease_lock_fence(lk),
        (long long)req->waited_ms);
    look_up(req);
}

static void start_request(struct request *req)
{
    char *save = NULL;
    char *verb = strtok_r(req->line, " \r", &save);
    char *table = strtok_r(NULL, " \r", &save);
    char *guest = strtok_r(NULL, " \r", &save);
    if (!verb || strcmp(verb, "BOOK") != 0 || !table || !guest || strtok_r(NULL, " \r", &save) ||
        !booking_name_ok(table) || !booking_name_ok(guest)) {
        reply(req, "ERR usage: BOOK <table> <guest> (names: [A-Za-z0-9_-], up to %d bytes)",
              BOOKING_NAME_MAX);
        finish(req);
        return;
    }
    strcpy(req->table, table);
    strcpy(req->guest, guest);
    req->started_ms = mono_ms();
    if (cfg.no_lock) {
        look_up(req);
        return;
    }
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    o.ttl_ms = cfg.ttl_ms;
    o.wait_ms = cfg.wait_ms;
    o.wait_retry_base_ms = 10; /* short retries until the wake-up channel is
                                * subscribed; then the queue hands a freed table over */
    o.wait_retry_max_ms = 100;
    o.fencing = 1;
    char resource[BOOKING_NAME_MAX + 8];
    snprintf(resource, sizeof resource, "table:%s", req->table);
    int rc = redlease_acquire(client, resource, &o, on_acquired, on_lost, req, &req->lk);
    if (rc != REDLEASE_OK) {
        reply(req, "ERR lock: %s", redlease_strerror(rc));
        finish(req);
    }
}

/* After the request line, until the reply: the client must stay. EOF or an
 * error means it went away: drop the request (finish() releases its lease)
 * rather than book a table nobody will hear about. */
static void on_client_while_serving(struct ev_loop *l, ev_io *w, int revents)
{
    (void)l, (void)revents;
    struct request *req = w->data;
    char junk[256];
    ssize_t n = recv(req->fd, junk, sizeof junk, 0);
    if (n > 0) return; /* bytes after the request line: ignored */
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    say("table:%s client went away before the reply (%s): nothing written%s", req->table,
        n == 0 ? "EOF" : strerror(errno), req->lk ? ", lease released" : "");
    hang_up(req);
    finish(req);
}

static void on_readable(struct ev_loop *l, ev_io *w, int revents)
{
    (void)l, (void)revents;
    struct request *req = w->data;
    ssize_t n = recv(req->fd, req->line + req->len, sizeof req->line - 1 - req->len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n < 0 || (n == 0 && req->len == 0)) { /* gone before asking anything */
        hang_up(req);
        finish(req);
        return;
    }
    char *end; /* of the line */
    if (n == 0) { /* EOF after a line without its newline: EOF ends it */
        end = req->line + req->len;
        req->line_ended_by_eof = 1;
    } else { /* only the new bytes can hold the newline */
        end = memchr(req->line + req->len, '\n', (size_t)n);
        req->len += (size_t)n;
    }
    if (!end) {
        if (req->len == sizeof req->line - 1) {
            reply(req, "ERR line too long");
            finish(req);
        }
        return;
    }
    *end = '\0';
    ev_timer_stop(loop, &req->read_timeout);
    if (memchr(req->line, '\0', (size_t)(end - req->line))) { /* strtok would stop there */
        reply(req, "ERR bad request");
        finish(req);
        return;
    }
    /* Set before start_request(), which may answer and free req. A client
     * that half-closed cannot be watched: its EOF is already here. */
    if (req->line_ended_by_eof)
        ev_io_stop(loop, &req->io);
    else
        ev_set_cb(&req->io, on_client_while_serving);
    start_request(req);
}

static void on_read_timeout(struct ev_loop *l, ev_timer *w, int revents)
{
    (void)l, (void)revents;
    struct request *req = w->data;
    say("no request line within %lld ms: hanging up", (long long)cfg.read_timeout_ms);
    reply(req, "ERR timeout"); /* best effort */
    finish(req);
}

static void on_accept(struct ev_loop *l, ev_io *w, int revents)
{
    (void)l, (void)w, (void)revents;
    for (;;) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                say("accept: %s: not accepting for 100 ms or until a connection closes",
                    strerror(errno));
                pause_accepting();
            } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
                       errno != ECONNABORTED) {
                say("accept: %s", strerror(errno));
            }
            return;
        }
        struct request *req = calloc(1, sizeof *req);
        if (!req) {
            close(fd);
            continue;
        }
        req->fd = fd;
        req->next = &live;
        req->prev = live.prev;
        live.prev->next = req;
        live.prev = req;
        ev_io_init(&req->io, on_readable, fd, EV_READ);
        req->io.data = req;
        ev_timer_init(&req->read_timeout, on_read_timeout, (double)cfg.read_timeout_ms / 1000.0, 0.0);
        req->read_timeout.data = req;
        ev_init(&req->work, work_done);
        req->work.data = req;
        ev_io_start(loop, &req->io);
        if (cfg.read_timeout_ms > 0) ev_timer_start(loop, &req->read_timeout);
    }
}

/* --------------------------------------------------------- start, stop */

static void announce_ready(void)
{
    if (announced_ready) return;
    announced_ready = 1;
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    getsockname(listen_fd, (struct sockaddr *)&sa, &len);
    if (cfg.no_lock)
        say("ready on 127.0.0.1:%d (no lock, work %lld ms)", ntohs(sa.sin_port),
            (long long)cfg.work_ms);
    else
        say("ready on 127.0.0.1:%d (redlease, ttl %lld ms, wait %lld ms, work %lld ms)",
            ntohs(sa.sin_port), (long long)cfg.ttl_ms, (long long)cfg.wait_ms,
            (long long)cfg.work_ms);
}

static void on_redis_event(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c, (void)arg;
    if (ev->type == REDLEASE_EV_CONNECTED) announce_ready();
    if (ev->type == REDLEASE_EV_DISCONNECTED)
        say("redis: %s", ev->detail ? ev->detail : redlease_strerror(ev->status));
}

static void shut_down(struct ev_loop *l, ev_signal *w, int revents)
{
    (void)l, (void)revents;
    say("signal %d: shutting down", w->signum);
    ev_signal_stop(loop, &sigterm_watcher);
    ev_signal_stop(loop, &sigint_watcher);
    ev_io_stop(loop, &accept_watcher);
    ev_timer_stop(loop, &accept_retry);
    close(listen_fd);
    listen_fd = -1;
    /* finish() may free req: take the next one first. Requests being
     * released stay on the list until on_released. */
    for (struct request *req = live.next, *next; req != &live; req = next) {
        next = req->next;
        reply(req, "ERR shutting down");
        finish(req);
    }
    /* Waits for those releases, then frees the client; the loop ends. */
    redlease_client_close(client, NULL, NULL);
    client = NULL;
}

static int listen_on(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 128) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int64_t number_arg(const char *opt, const char *s, long long max)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 0 || v > max) {
        fprintf(stderr, "booking-server: %s wants a number from 0 to %lld, not '%s'\n", opt, max, s);
        exit(2);
    }
    return v;
}

#define MAX_MS (3600LL * 1000) /* an hour: any longer is a typo */

static void parse_args(int argc, char **argv)
{
    enum { O_WORK = 256, O_TTL, O_WAIT, O_READ_TIMEOUT, O_NOLOCK, O_UNSAFE };
    static const struct option opts[] = {
        {"store", required_argument, NULL, 's'},   {"name", required_argument, NULL, 'n'},
        {"port", required_argument, NULL, 'p'},    {"work-ms", required_argument, NULL, O_WORK},
        {"ttl-ms", required_argument, NULL, O_TTL}, {"wait-ms", required_argument, NULL, O_WAIT},
        {"read-timeout-ms", required_argument, NULL, O_READ_TIMEOUT},
        {"no-lock", no_argument, NULL, O_NOLOCK},
        {"unsafe-write-after-loss", no_argument, NULL, O_UNSAFE},
        {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "s:n:p:", opts, NULL)) != -1) {
        switch (c) {
        case 's': cfg.store_path = optarg; break;
        case 'n': cfg.name = optarg; break;
        case 'p': cfg.port = (int)number_arg("--port", optarg, 65535); break;
        case O_WORK: cfg.work_ms = number_arg("--work-ms", optarg, MAX_MS); break;
        case O_TTL: cfg.ttl_ms = number_arg("--ttl-ms", optarg, MAX_MS); break;
        case O_WAIT: cfg.wait_ms = number_arg("--wait-ms", optarg, MAX_MS); break;
        case O_READ_TIMEOUT:
            cfg.read_timeout_ms = number_arg("--read-timeout-ms", optarg, MAX_MS);
            break;
        case O_NOLOCK: cfg.no_lock = 1; break;
        case O_UNSAFE: cfg.unsafe_write_after_loss = 1; break;
        default: exit(2);
        }
    }
    if (!cfg.store_path || optind != argc || !booking_name_ok(cfg.name)) {
        fprintf(stderr, "usage: booking-server --store FILE [--name NAME] [--port N] [--work-ms N]\n"
                        "         [--ttl-ms N] [--wait-ms N] [--read-timeout-ms N]\n"
                        "         [--no-lock] [--unsafe-write-after-loss]\n");
        exit(2);
    }
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    setvbuf(stdout, NULL, _IOLBF, 0); /* the demo reads the log as it grows */
    loop = EV_DEFAULT;

    if (booking_store_open(&store, cfg.store_path, cfg.name) != 0) {
        fprintf(stderr, "booking-server: store %s: %s\n", cfg.store_path, strerror(errno));
        return 1;
    }
    listen_fd = listen_on(cfg.port);
    if (listen_fd < 0) {
        fprintf(stderr, "booking-server: listen on 127.0.0.1:%d: %s\n", cfg.port, strerror(errno));
        booking_store_close(store);
        return 1;
    }
    ev_io_init(&accept_watcher, on_accept, listen_fd, EV_READ);
    ev_io_start(loop, &accept_watcher);
    ev_timer_init(&accept_retry, on_accept_retry, 0.1, 0.0);
    ev_signal_init(&sigterm_watcher, shut_down, SIGTERM);
    ev_signal_init(&sigint_watcher, shut_down, SIGINT);
    ev_signal_start(loop, &sigterm_watcher);
    ev_signal_start(loop, &sigint_watcher);

    if (cfg.no_lock) {
        announce_ready();
    } else {
        redlease_client_options o;
        redlease_client_options_init(&o);
        example_server_from_env(&o);
        int rc = redlease_client_new(&client, &o);
        if (rc == REDLEASE_OK) {
            redlease_client_set_event_cb(client, on_redis_event, NULL);
            rc = redlease_libev_attach(client, loop);
        }
        if (rc != REDLEASE_OK) {
            fprintf(stderr, "booking-server: redlease: %s\n", redlease_strerror(rc));
            redlease_client_free(client);
            close(listen_fd);
            booking_store_close(store);
            return 1;
        }
    }

    ev_run(loop, 0); /* until shut_down() has stopped every watcher */
    booking_store_close(store);
    ev_loop_destroy(loop);
    say("stopped");
    return 0;
}
