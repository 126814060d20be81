/* SPDX-License-Identifier: MIT */
/* netfault-proxy: network faults for the chaos run (chaos.sh), without
 * kernel netem. It listens on a unix socket, opens one upstream connection
 * (unix path, or HOST:PORT over TCP) per accepted client and forwards bytes
 * both ways; lines on its standard input inject faults into that traffic:
 *
 *   delay MS FOR_MS   for FOR_MS, every byte read (either way) is forwarded
 *                     MS ms later, in order: like netem delay
 *   drop FOR_MS       a partition: nothing is forwarded either way for
 *                     FOR_MS, then the held bytes go through (a loss TCP
 *                     heals by retransmission)
 *   cut FOR_MS        a partition, after which every connection still open
 *                     is closed on both sides (a loss the connection did not
 *                     survive): reset on TCP, an end of stream on a unix
 *                     socket, which has no reset
 *   clear             ends the current fault now
 *
 * A delay, drop or cut may end in pid=PID: it then touches only the
 * connections made by the process PID (the peer's credentials on the unix
 * socket, SO_PEERCRED, taken at accept), those it opens meanwhile too: one
 * chaos worker cut off while the others go on. Where the system has no
 * SO_PEERCRED, such a fault touches nothing (and says so on stderr).
 *
 * One fault at a time: a new line ends the current fault first. Blank lines
 * and lines starting with '#' are ignored.
 *
 *   netfault-proxy [-m MAX_HELD_BYTES] LISTEN_PATH UPSTREAM
 *   netfault-proxy --now        prints the clock, as chaos-worker --now
 *
 * Standard output gets one line per fault when it ends, in the format of
 * chaos.sh's faults.log; times are CLOCK_MONOTONIC ms (with us):
 *   T0 net-delay T1 ms=MS for=FOR_MS conns=N   N: connections open at T1
 *   T0 net-drop T1 ms=FOR_MS conns=N
 *   T0 net-cut T1 ms=FOR_MS conns=N            N: connections closed at T1
 * (" pid=PID" at the end of a fault given one; N then counts its
 * connections only)
 * and one line when a connection holds more than MAX_HELD_BYTES (default
 * 1 MiB) not yet forwarded: it is closed, which bounds the memory:
 *   T overflow conn=ID held=BYTES
 * Standard error gets diagnostics: "T begin ..." when a fault starts (tests
 * wait for it), failed upstream connects (Redis restarting), bad commands.
 *
 * It exits 0 on end of input, SIGTERM or SIGINT, closing every connection
 * and removing LISTEN_PATH; 1 if it could not start.
 */
#define _POSIX_C_SOURCE 200809L
#define _GNU_SOURCE /* struct ucred (SO_PEERCRED) */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define READ_SIZE 16384
#define MAX_CONNS 256
#define MAX_FAULT_MS 3600000L

enum { CLIENT, UPSTREAM };          /* the two ends of a connection */
enum fault_kind { NONE, DELAY, DROP, CUT };
static const char *const fault_names[] = { "none", "net-delay", "net-drop", "net-cut" };

/* Bytes read from one end, due at the other at due_us; len 0: the end of
 * the stream (the reader saw EOF), forwarded as a shutdown in its turn. */
struct chunk {
    struct chunk *next;
    int64_t due_us;
    size_t len;
    char data[];
};

/* One direction: bytes read from fd[from], written to fd[!from]. */
struct queue {
    struct chunk *head, *tail;
    size_t off;                     /* bytes of head already written */
    int read_eof;                   /* no more reads from the source */
    int blocked;                    /* the last write said EAGAIN */
};

struct conn {
    struct conn *next;
    unsigned long id;
    int fd[2];
    struct queue q[2];              /* q[CLIENT]: client -> upstream */
    int connecting;                 /* the upstream TCP connect is under way */
    size_t held;                    /* bytes queued, both ways */
    int pidx[2];                    /* their slots in the poll set, or -1 */
    long pid;                       /* the client's process, or 0 if unknown */
};

static struct {
    enum fault_kind kind;
    int64_t t0_us, end_us;
    long ms, for_ms;
    long pid;                       /* only this process's connections; 0: all */
} fault;

static struct conn *conns;
static int nconns;
static unsigned long next_id = 1;
static size_t max_held = 1 << 20;
static const char *listen_path;
static const char *upstream;
static struct sockaddr_storage up_addr;
static socklen_t up_addrlen;
static int sig_pipe[2] = { -1, -1 };

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The time as chaos-worker prints it: ms with three digits of us. */
static const char *fmt_time(int64_t t_us, char buf[32])
{
    snprintf(buf, 32, "%" PRId64 ".%03d", t_us / 1000, (int)(t_us % 1000));
    return buf;
}

static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void diag(const char *fmt, ...)
{
    char t[32];
    va_list ap;
    fprintf(stderr, "netfault-proxy: %s ", fmt_time(now_us(), t));
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static int set_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

static void on_signal(int sig)
{
    int saved = errno;
    char c = (char)sig;
    if (write(sig_pipe[1], &c, 1) < 0) { /* full: a byte is already there */ }
    errno = saved;
}

/* ---------------------------------------------------------------- upstream */

/* UPSTREAM with a '/' is a unix socket path, else HOST:PORT. */
static int resolve_upstream(void)
{
    if (strchr(upstream, '/')) {
        struct sockaddr_un *addr = (struct sockaddr_un *)&up_addr;
        if (strlen(upstream) >= sizeof addr->sun_path) return -1;
        addr->sun_family = AF_UNIX;
        strcpy(addr->sun_path, upstream);
        up_addrlen = sizeof *addr;
        return 0;
    }
    const char *colon = strrchr(upstream, ':');
    if (!colon || colon == upstream || colon[1] == '\0') return -1;
    char host[256];
    size_t hlen = (size_t)(colon - upstream);
    if (hlen >= sizeof host) return -1;
    memcpy(host, upstream, hlen);
    host[hlen] = '\0';
    struct addrinfo hints = { 0 }, *res;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0) return -1;
    memcpy(&up_addr, res->ai_addr, res->ai_addrlen);
    up_addrlen = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

/* A non-blocking socket connecting to the upstream; *in_progress: a TCP
 * connect to finish when the socket turns writable. -1 on failure. */
static int connect_upstream(int *in_progress)
{
    int fd = socket(up_addr.ss_family, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    if (set_nonblocking(fd) < 0) { close(fd); return -1; }
    if (up_addr.ss_family != AF_UNIX) {
        int one = 1;  /* small requests must not wait for Nagle */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    *in_progress = 0;
    if (connect(fd, (struct sockaddr *)&up_addr, up_addrlen) == 0) return fd;
    if (errno == EINPROGRESS) { *in_progress = 1; return fd; }
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

/* ------------------------------------------------------------- connections */

static void queue_free(struct queue *q)
{
    while (q->head) {
        struct chunk *c = q->head;
        q->head = c->next;
        free(c);
    }
    q->tail = NULL;
}

/* Closes both ends. hard: a reset (SO_LINGER 0), for what a lost
 * connection looks like; else an orderly close. A unix socket has no
 * reset: its peer sees an end of stream either way. */
static void conn_close(struct conn *c, int hard)
{
    struct conn **p;
    for (int end = CLIENT; end <= UPSTREAM; end++) {
        if (hard) {
            struct linger lg = { 1, 0 };
            setsockopt(c->fd[end], SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        }
        close(c->fd[end]);
        queue_free(&c->q[end]);
    }
    for (p = &conns; *p != c; p = &(*p)->next) {}
    *p = c->next;
    nconns--;
    free(c);
}

static void close_all(int hard)
{
    while (conns) conn_close(conns, hard);
}

static void accept_clients(int lfd)
{
    for (;;) {
        int cfd = accept(lfd, NULL, NULL);
        if (cfd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                diag("accept: %s", strerror(errno));
            return;
        }
        int in_progress, ufd = -1;
        if (nconns >= MAX_CONNS) diag("more than %d connections: refused", MAX_CONNS);
        else if (set_nonblocking(cfd) < 0) diag("fcntl: %s", strerror(errno));
        else if ((ufd = connect_upstream(&in_progress)) < 0)
            diag("upstream %s: %s", upstream, strerror(errno));
        if (ufd < 0) { close(cfd); continue; }
        struct conn *c = calloc(1, sizeof *c);
        if (!c) { diag("out of memory"); close(cfd); close(ufd); continue; }
        c->id = next_id++;
#ifdef SO_PEERCRED
        struct ucred cred;
        socklen_t credlen = sizeof cred;
        if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &credlen) == 0) c->pid = cred.pid;
#endif
        c->fd[CLIENT] = cfd;
        c->fd[UPSTREAM] = ufd;
        c->connecting = in_progress;
        c->next = conns;
        conns = c;
        nconns++;
    }
}

/* A TCP connect finished (writable or error): did it succeed? */
static int connect_done(struct conn *c)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->fd[UPSTREAM], SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
    if (err) { diag("upstream %s: %s", upstream, strerror(err)); return 0; }
    c->connecting = 0;
    return 1;
}

/* Does the current fault touch connection c? */
static int in_scope(const struct conn *c) { return fault.kind != NONE && (!fault.pid || c->pid == fault.pid); }
static int is_partitioned(const struct conn *c) { return (fault.kind == DROP || fault.kind == CUT) && in_scope(c); }

/* Reads what fd[from] has into q[from]. 0 if the connection is to close. */
static int conn_read(struct conn *c, int from, int64_t now)
{
    struct queue *q = &c->q[from];
    char buf[READ_SIZE];
    ssize_t n = read(c->fd[from], buf, sizeof buf);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    if (c->held + (size_t)n > max_held) {
        char t[32];
        printf("%s overflow conn=%lu held=%zu\n", fmt_time(now, t), c->id, c->held + (size_t)n);
        return 0;
    }
    struct chunk *k = malloc(sizeof *k + (size_t)n);
    if (!k) { diag("out of memory: conn %lu closed", c->id); return 0; }
    k->next = NULL;
    k->due_us = now + (fault.kind == DELAY && in_scope(c) ? (int64_t)fault.ms * 1000 : 0);
    k->len = (size_t)n;
    memcpy(k->data, buf, (size_t)n);
    if (q->tail) q->tail->next = k; else q->head = k;
    q->tail = k;
    c->held += (size_t)n;
    if (n == 0) q->read_eof = 1;
    return 1;
}

/* Writes the due chunks of q[from] to the other end, until one is not due
 * or the socket is full. 0 if the connection is to close. */
static int conn_flush(struct conn *c, int from, int64_t now)
{
    struct queue *q = &c->q[from];
    int to = !from;
    q->blocked = 0;
    if (c->connecting || is_partitioned(c)) return 1;
    while (q->head && q->head->due_us <= now) {
        struct chunk *k = q->head;
        if (k->len == 0) {
            /* The source's EOF: pass it on; once both ways are done, close. */
            shutdown(c->fd[to], SHUT_WR);
            q->head = NULL;
            q->tail = NULL;
            free(k);
            return !(c->q[to].read_eof && !c->q[to].head);
        }
        ssize_t n = send(c->fd[to], k->data + q->off, k->len - q->off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) { q->blocked = 1; return 1; }
            if (errno == EINTR) continue;
            return 0;
        }
        q->off += (size_t)n;
        if (q->off < k->len) continue;
        c->held -= k->len;
        q->off = 0;
        q->head = k->next;
        if (!q->head) q->tail = NULL;
        free(k);
    }
    return 1;
}

/* ------------------------------------------------------------------ faults */

/* Connections the current fault touches. */
static int scope_count(void)
{
    int n = 0;
    for (struct conn *c = conns; c; c = c->next) n += in_scope(c);
    return n;
}

static void end_fault(int64_t now)
{
    char t0[32], t1[32];
    if (fault.kind == NONE) return;
    int n = scope_count();
    if (fault.kind == CUT) {
        for (struct conn *c = conns, *next; c; c = next) {
            next = c->next;
            if (in_scope(c)) conn_close(c, 1);
        }
    }
    printf("%s %s %s ms=%ld", fmt_time(fault.t0_us, t0), fault_names[fault.kind],
           fmt_time(now, t1), fault.kind == DELAY ? fault.ms : fault.for_ms);
    if (fault.kind == DELAY) printf(" for=%ld", fault.for_ms);
    printf(" conns=%d", n);
    if (fault.pid) printf(" pid=%ld", fault.pid);
    printf("\n");
    fault.kind = NONE;
    fault.pid = 0;
}

static int parse_ms(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < 0 || v > MAX_FAULT_MS) return -1;
    *out = v;
    return 0;
}

static void command(char *line, int64_t now)
{
    char *argv[5], *save = NULL;
    int argc = 0;
    for (char *tok = strtok_r(line, " \t\r", &save); tok && argc < 5; tok = strtok_r(NULL, " \t\r", &save))
        argv[argc++] = tok;
    if (argc == 0 || argv[0][0] == '#') return;

    enum fault_kind kind = NONE;
    long ms = 0, for_ms = 0, pid = 0;
    /* A trailing pid=PID scopes a delay, drop or cut to one process. */
    if (argc > 1 && strncmp(argv[argc - 1], "pid=", 4) == 0) {
        char *end;
        errno = 0;
        pid = strtol(argv[argc - 1] + 4, &end, 10);
        if (errno || *end != '\0' || pid <= 0) {
            diag("bad pid: %s", argv[argc - 1]);
            return;
        }
        argc--;
#ifndef SO_PEERCRED
        diag("no SO_PEERCRED here: pid=%ld touches no connection", pid);
#endif
    }
    if (strcmp(argv[0], "delay") == 0 && argc == 3 && parse_ms(argv[1], &ms) == 0 &&
        parse_ms(argv[2], &for_ms) == 0)
        kind = DELAY;
    else if ((strcmp(argv[0], "drop") == 0 || strcmp(argv[0], "cut") == 0) && argc == 2 &&
             parse_ms(argv[1], &for_ms) == 0)
        kind = argv[0][0] == 'd' ? DROP : CUT;
    else if (strcmp(argv[0], "clear") == 0 && argc == 1 && !pid) {
        end_fault(now);
        return;
    } else {
        diag("bad command (delay MS FOR_MS | drop FOR_MS | cut FOR_MS [pid=PID] | clear): %s", argv[0]);
        return;
    }
    end_fault(now);
    fault.kind = kind;
    fault.t0_us = now;
    fault.end_us = now + (int64_t)for_ms * 1000;
    fault.ms = ms;
    fault.for_ms = for_ms;
    fault.pid = pid;
    char scope[32] = "";
    if (pid) snprintf(scope, sizeof scope, " pid=%ld", pid);
    if (kind == DELAY) diag("begin %s ms=%ld for=%ld conns=%d%s", fault_names[kind], ms, for_ms, scope_count(), scope);
    else diag("begin %s ms=%ld conns=%d%s", fault_names[kind], for_ms, scope_count(), scope);
}

/* Reads standard input, runs each complete line. 0 at its end. */
static int read_commands(int64_t now)
{
    static char buf[512];
    static size_t len;
    ssize_t n = read(STDIN_FILENO, buf + len, sizeof buf - 1 - len);
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    if (n == 0) return 0;
    len += (size_t)n;
    buf[len] = '\0';
    char *start = buf, *nl;
    while ((nl = strchr(start, '\n'))) {
        *nl = '\0';
        command(start, now);
        start = nl + 1;
    }
    len -= (size_t)(start - buf);
    memmove(buf, start, len);
    if (len == sizeof buf - 1) { diag("command line too long: ignored"); len = 0; }
    return 1;
}

/* -------------------------------------------------------------------- main */

static int listen_unix(const char *path)
{
    struct sockaddr_un addr = { 0 };
    if (strlen(path) >= sizeof addr.sun_path) { errno = ENAMETOOLONG; return -1; }
    addr.sun_family = AF_UNIX;
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    unlink(path);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(fd, 64) < 0 ||
        set_nonblocking(fd) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* How long poll may sleep: until the next due chunk or the fault's end. */
static int poll_timeout_ms(int64_t now)
{
    int64_t next = INT64_MAX;
    if (fault.kind != NONE) next = fault.end_us;
    for (struct conn *c = conns; c; c = c->next) {
        if (is_partitioned(c)) continue;
        for (int from = CLIENT; from <= UPSTREAM; from++)
            if (c->q[from].head && !c->q[from].blocked && !c->connecting && c->q[from].head->due_us < next)
                next = c->q[from].head->due_us;
    }
    if (next == INT64_MAX) return -1;
    if (next <= now) return 0;
    int64_t ms = (next - now + 999) / 1000;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

static void run(int lfd)
{
    struct pollfd pfd[3 + 2 * MAX_CONNS];
    for (;;) {
        int64_t now = now_us();
        if (fault.kind != NONE && now >= fault.end_us) end_fault(now);
        for (struct conn *c = conns, *next; c; c = next) {
            next = c->next;
            if (!conn_flush(c, CLIENT, now) || !conn_flush(c, UPSTREAM, now)) conn_close(c, 0);
        }
        fflush(stdout);

        int n = 0;
        pfd[n++] = (struct pollfd){ .fd = sig_pipe[0], .events = POLLIN };
        pfd[n++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
        pfd[n++] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
        for (struct conn *c = conns; c; c = c->next) {
            for (int end = CLIENT; end <= UPSTREAM; end++) {
                short ev = 0;
                if (end == UPSTREAM && c->connecting) ev = POLLOUT;
                else {
                    if (!c->q[end].read_eof && !(end == UPSTREAM && c->connecting)) ev |= POLLIN;
                    if (c->q[!end].blocked) ev |= POLLOUT;
                }
                c->pidx[end] = -1;
                if (ev) { c->pidx[end] = n; pfd[n++] = (struct pollfd){ .fd = c->fd[end], .events = ev }; }
            }
        }
        if (poll(pfd, (nfds_t)n, poll_timeout_ms(now)) < 0) {
            if (errno == EINTR) continue;
            diag("poll: %s", strerror(errno));
            return;
        }
        if (pfd[0].revents) return;                     /* SIGTERM or SIGINT */
        now = now_us();
        if (pfd[2].revents && !read_commands(now)) return; /* end of input */
        for (struct conn *c = conns, *next; c; c = next) {
            next = c->next;
            int ok = 1;
            for (int end = CLIENT; end <= UPSTREAM && ok; end++) {
                short re = c->pidx[end] >= 0 ? pfd[c->pidx[end]].revents : 0;
                if (!re) continue;
                if (end == UPSTREAM && c->connecting) { ok = connect_done(c); continue; }
                if (!c->q[end].read_eof && (re & (POLLIN | POLLHUP | POLLERR))) ok = conn_read(c, end, now);
                /* Writable, or an error the next write will report: the
                 * flush at the top of the loop writes. */
                if (re & (POLLOUT | POLLHUP | POLLERR)) c->q[!end].blocked = 0;
            }
            if (!ok) conn_close(c, 0);
        }
        if (pfd[1].revents) accept_clients(lfd);
    }
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--now") == 0) {
        char t[32];
        printf("%s\n", fmt_time(now_us(), t));
        return 0;
    }
    int argi = 1;
    if (argc == 5 && strcmp(argv[1], "-m") == 0) {
        char *end;
        unsigned long long m = strtoull(argv[2], &end, 10);
        if (*end != '\0' || m == 0) argc = 0;
        max_held = (size_t)m;
        argi = 3;
    }
    if (argc - argi != 2) {
        fprintf(stderr, "usage: netfault-proxy [-m MAX_HELD_BYTES] LISTEN_PATH UPSTREAM\n"
                        "       netfault-proxy --now\n");
        return 1;
    }
    listen_path = argv[argi];
    upstream = argv[argi + 1];
    if (resolve_upstream() < 0) {
        fprintf(stderr, "netfault-proxy: bad upstream %s (a unix socket path or HOST:PORT)\n", upstream);
        return 1;
    }
    if (pipe(sig_pipe) < 0 || set_nonblocking(sig_pipe[1]) < 0) { perror("netfault-proxy: pipe"); return 1; }
    struct sigaction sa = { 0 };
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);

    int lfd = listen_unix(listen_path);
    if (lfd < 0) {
        fprintf(stderr, "netfault-proxy: listen on %s: %s\n", listen_path, strerror(errno));
        return 1;
    }
    run(lfd);
    end_fault(now_us());
    close_all(0);
    close(lfd);
    unlink(listen_path);
    close(sig_pipe[0]);
    close(sig_pipe[1]);
    return 0;
}
