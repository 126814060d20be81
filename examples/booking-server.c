/* booking-server: a small libev TCP server that books restaurant tables in a
 * shared store (booking-store.h), protecting each table with a redlease lease
 * and writing with the lease's fencing token. `make demo` (examples/demo.sh)
 * runs several of these side by side.
 *
 * Protocol: one request line per connection, one reply line, then close.
 *     BOOK <table> <guest>
 *     -> OK <fence> <waited_ms>       booked (fence 0 with --no-lock)
 *        TAKEN <guest>                the table was already booked
 *        BUSY                         the lock stayed taken for --wait-ms
 *        LOST                         the lease was lost before the write: nothing written
 *        STALE <fence> <store_fence>  the store's fencing check refused the write
 *        ERR <text>
 *
 * Per request: acquire "table:<T>" (fencing, wait budget), look the table up
 * in the store, work for --work-ms (a libev timer: the loop keeps serving
 * other requests), check redlease_lock_held(), write with the fence, release.
 * Each request has its own lock handle, so one server runs many at once.
 *
 *   booking-server --store FILE [--name NAME] [--port N] [--work-ms N]
 *                  [--ttl-ms N] [--wait-ms N] [--no-lock] [--unsafe-write-after-loss]
 *
 *   --port 0 (default) takes any free port; the "ready" log line names it.
 *   --no-lock          skip redlease: look up, work, write (the unsafe baseline).
 *   --unsafe-write-after-loss  DEMO ONLY: when the lease is lost during the
 *                      work, write anyway, as a write already sent before the
 *                      process was paused would still reach the store; the
 *                      store's fencing check must refuse it. A real server
 *                      answers LOST and writes nothing (the default).
 *
 * Redis: REDLEASE_SOCKET, or REDLEASE_HOST / REDLEASE_PORT (example-env.h).
 * Log: one line per event on stdout, "<unix ms> <name> <text>", which the
 * demo reads. SIGTERM / SIGINT: answer pending requests "ERR shutting down",
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

#include "booking-store.h"
#include "example-env.h"

struct config {
    const char *name, *store_path;
    int port;
    int64_t work_ms, ttl_ms, wait_ms;
    int no_lock, unsafe_write_after_loss;
};

/* One BOOK request, from accept to the release of its lease. */
struct request {
    struct request *prev, *next; /* live requests, for shutdown */
    int fd;                      /* -1 once answered */
    ev_io io;                    /* reading the request line */
    ev_timer work;               /* the simulated work before the write */
    char line[128];
    size_t len;
    char table[BOOKING_NAME_MAX + 1], guest[BOOKING_NAME_MAX + 1];
    redlease_lock *lk;  /* NULL with --no-lock */
    int64_t started_ms; /* monotonic, when the acquire began */
    int64_t waited_ms;  /* how long the acquire took */
    int lost;           /* on_lost has run */
    int write_when_lost; /* --unsafe-write-after-loss: the write waits for on_lost */
    int releasing;       /* redlease_release() called: on_released frees it */
};

static struct config cfg = {
    .name = "server", .port = 0, .work_ms = 200, .ttl_ms = 1000, .wait_ms = 5000,
};
static struct ev_loop *loop;
static redlease_client *client;
static booking_store *store;
static int listen_fd = -1;
static ev_io accept_watcher;
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

/* Wall clock, so the demo script can line log lines up with its own clock. */
static void say(const char *fmt, ...)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    printf("%lld %s ", (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, cfg.name);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
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
    if (send(req->fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
        say("reply to a request for table %s lost: %s", req->table, strerror(errno));
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
    ev_timer_stop(loop, &req->work);
    if (!req->lk) {
        request_free(req);
        return;
    }
    if (req->releasing) return;
    req->releasing = 1;
    if (redlease_release(req->lk, on_released, req) != REDLEASE_OK) request_free(req);
}

static void write_booking(struct request *req)
{
    uint64_t fence = req->lk ? redlease_lock_fence(req->lk) : 0, store_fence = 0;
    if (req->lost)
        say("table:%s writing anyway with fence %" PRIu64
            " (--unsafe-write-after-loss: a write sent before the pause)", req->table, fence);
    int rc = booking_store_book(store, req->table, req->guest, fence, &store_fence);
    if (rc == BOOKING_ACCEPTED) {
        say("table:%s booked for %s (fence %" PRIu64 ")", req->table, req->guest, fence);
        reply(req, "OK %" PRIu64 " %lld", fence, (long long)req->waited_ms);
    } else if (rc == BOOKING_STALE) {
        say("table:%s write with fence %" PRIu64 " refused by the store (store has %" PRIu64 ")",
            req->table, fence, store_fence);
        reply(req, "STALE %" PRIu64 " %" PRIu64, fence, store_fence);
    } else {
        reply(req, "ERR store: %s", strerror(errno));
    }
    finish(req);
}

static void work_done(struct ev_loop *l, ev_timer *w, int revents)
{
    (void)l, (void)revents;
    struct request *req = w->data;
    if (req->lk && !redlease_lock_held(req->lk)) { /* never write without the lease */
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
    int rc = booking_store_lookup(store, req->table, holder, sizeof holder);
    if (rc < 0) {
        reply(req, "ERR store: %s", strerror(errno));
    } else if (rc > 0) {
        reply(req, "TAKEN %s", holder);
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
    o.retry_base_ms = 10; /* short retries: a freed table is taken soon after */
    o.retry_max_ms = 100;
    o.fencing = 1;
    char resource[BOOKING_NAME_MAX + 8];
    snprintf(resource, sizeof resource, "table:%s", req->table);
    int rc = redlease_acquire(client, resource, &o, on_acquired, on_lost, req, &req->lk);
    if (rc != REDLEASE_OK) {
        reply(req, "ERR lock: %s", redlease_strerror(rc));
        finish(req);
    }
}

static void on_readable(struct ev_loop *l, ev_io *w, int revents)
{
    (void)l, (void)revents;
    struct request *req = w->data;
    ssize_t n = recv(req->fd, req->line + req->len, sizeof req->line - 1 - req->len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) { /* gone before asking anything */
        hang_up(req);
        finish(req);
        return;
    }
    req->len += (size_t)n;
    req->line[req->len] = '\0';
    char *nl = strchr(req->line, '\n');
    if (nl) {
        *nl = '\0';
        ev_io_stop(loop, &req->io);
        start_request(req);
    } else if (req->len == sizeof req->line - 1) {
        reply(req, "ERR line too long");
        finish(req);
    }
}

static void on_accept(struct ev_loop *l, ev_io *w, int revents)
{
    (void)l, (void)w, (void)revents;
    for (;;) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                say("accept: %s", strerror(errno));
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
        ev_init(&req->work, work_done);
        req->work.data = req;
        ev_io_start(loop, &req->io);
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
    enum { O_WORK = 256, O_TTL, O_WAIT, O_NOLOCK, O_UNSAFE };
    static const struct option opts[] = {
        {"store", required_argument, NULL, 's'},   {"name", required_argument, NULL, 'n'},
        {"port", required_argument, NULL, 'p'},    {"work-ms", required_argument, NULL, O_WORK},
        {"ttl-ms", required_argument, NULL, O_TTL}, {"wait-ms", required_argument, NULL, O_WAIT},
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
        case O_NOLOCK: cfg.no_lock = 1; break;
        case O_UNSAFE: cfg.unsafe_write_after_loss = 1; break;
        default: exit(2);
        }
    }
    if (!cfg.store_path || optind != argc || !booking_name_ok(cfg.name)) {
        fprintf(stderr, "usage: booking-server --store FILE [--name NAME] [--port N] [--work-ms N]\n"
                        "         [--ttl-ms N] [--wait-ms N] [--no-lock] [--unsafe-write-after-loss]\n");
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
