/* SPDX-License-Identifier: MIT */
#include "fake.h"
#include "sha1.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "transport_hiredis.h"

/* ------------------------------------------------------------ transport */

static void record(fake_cmd *cmd, int argc, const char **argv, const size_t *lens, void *req,
                   int64_t now)
{
    memset(cmd, 0, sizeof *cmd);
    cmd->argc = argc;
    cmd->argv = malloc((size_t)argc * sizeof *cmd->argv);
    for (int i = 0; i < argc; i++) {
        cmd->argv[i] = malloc(lens[i] + 1);
        memcpy(cmd->argv[i], argv[i], lens[i]);
        cmd->argv[i][lens[i]] = '\0';
    }
    cmd->req = req;
    cmd->sent_at = now;
}

static void note_endpoint(char *host, size_t size, int *port, const rdl_endpoint *ep)
{
    snprintf(host, size, "%s", ep->host ? ep->host : "");
    *port = ep->port;
}

static int fake_connect_op(void *self, const rdl_endpoint *ep)
{
    fake *f = self;
    note_endpoint(f->host, sizeof f->host, &f->port, ep);
    f->connects++;
    if (f->connect_rc) return f->connect_rc;
    f->connecting = 1;
    return 0;
}

static int fake_submit(void *self, int argc, const char **argv, const size_t *lens, void *req)
{
    fake *f = self;
    if (f->refuse || f->ncmds >= FAKE_MAX_CMDS) f->refused++;
    if (f->refused > 100000) f->refuse = 0; /* a core that spins: let it out */
    if (!f->connected || f->refuse || f->ncmds >= FAKE_MAX_CMDS) return REDLEASE_ECONN;
    record(&f->cmds[f->ncmds++], argc, argv, lens, req, f->now);
    return 0;
}

static void answer(fake *f, const rdl_reply *r)
{
    fake_cmd *cmd = fake_peek(f);
    if (!cmd) return;
    cmd->answered = 1;
    f->head++;
    rdl_conn_on_reply(&f->tc->main.conn, cmd->req, r);
}

static void fail_pending(fake *f)
{
    while (fake_peek(f)) answer(f, NULL);
}

static void fake_close(void *self)
{
    fake *f = self;
    f->connected = f->connecting = 0;
    fail_pending(f);
}

static void fake_destroy(void *self) { (void)self; }

static const rdl_transport_ops fake_ops = {fake_connect_op, fake_submit, fake_submit, fake_close,
                                           fake_destroy};

/* ------------------------------------------------------- the side link */

static fake *the_fake; /* the factory has no user pointer of its own */

static int side_connect_op(void *self, const rdl_endpoint *ep)
{
    fake_side *s = self;
    note_endpoint(s->host, sizeof s->host, &s->port, ep);
    s->connects++;
    s->connecting = 1;
    return 0;
}

static int side_send(fake_side *s, int argc, const char **argv, const size_t *lens, void *req,
                     int subscribed)
{
    if (!s->connected || s->ncmds >= FAKE_SIDE_CMDS) return REDLEASE_ECONN;
    fake_cmd *cmd = &s->cmds[s->ncmds++];
    record(cmd, argc, argv, lens, req, the_fake->now);
    cmd->subscribed = subscribed;
    return 0;
}

static int side_submit(void *self, int argc, const char **argv, const size_t *lens, void *req)
{
    return side_send(self, argc, argv, lens, req, 0);
}

static int side_subscribe(void *self, int argc, const char **argv, const size_t *lens, void *req)
{
    return side_send(self, argc, argv, lens, req, 1);
}

/* Every command still open gets NULL, in order: the link is gone. */
static void side_fail_all(fake_side *s)
{
    for (int i = 0; i < s->ncmds; i++) {
        if (s->cmds[i].answered) continue;
        s->cmds[i].answered = 1;
        rdl_conn_on_reply(s->cn, s->cmds[i].req, NULL);
    }
    s->head = s->ncmds;
}

static void side_close(void *self)
{
    fake_side *s = self;
    s->connected = s->connecting = 0;
    side_fail_all(s);
}

static const rdl_transport_ops side_ops = {side_connect_op, side_submit, side_subscribe, side_close,
                                           fake_destroy};

/* The link serving cn: the side link for the first connection but the
 * client's own, the peers for the next ones. */
static fake_side *link_for(rdl_conn *cn)
{
    fake *f = the_fake;
    if (!f->side.cn || f->side.cn == cn) return &f->side;
    for (int i = 0; i < FAKE_PEERS; i++)
        if (!f->peers[i].cn || f->peers[i].cn == cn) return &f->peers[i];
    return NULL;
}

static int fake_factory(rdl_transport *out, rdl_conn *cn, struct rdl_loop *loop)
{
    (void)loop;
    if (cn == &the_fake->tc->main.conn) {
        out->ops = &fake_ops;
        out->self = the_fake;
        return 0;
    }
    fake_side *s = link_for(cn);
    if (!s) return REDLEASE_ENOMEM; /* more links than the fake has */
    s->cn = cn;
    out->ops = &side_ops;
    out->self = s;
    return 0;
}

/* ----------------------------------------------------------------- loop */

/* The fake transports open no socket: nothing is ever watched. */
static int loop_watch(void *d, int fd, int events, void **slot)
{
    (void)d, (void)fd, (void)events, (void)slot;
    return -1;
}

static void loop_unwatch(void *d, int fd, void *slot)
{
    (void)d, (void)fd, (void)slot;
}

static void loop_timer_set(void *d, int64_t after)
{
    fake *f = d;
    f->timer_sets++;
    f->last_after = after;
    f->timer_at = after < 0 ? -1 : f->now + after;
}

static void loop_detach(void *d)
{
    fake *f = d;
    f->detached++;
    f->timer_at = -1;
}

static const redlease_loop_ops fake_loop = {loop_watch, loop_unwatch, loop_timer_set, loop_detach};

static int64_t fake_clock(void *arg)
{
    fake *f = arg;
    f->clock_reads++;
    return f->now;
}

/* ------------------------------------------------------------------ API */

void fake_attach(fake *f, const redlease_client_options *o)
{
    memset(f, 0, sizeof *f);
    f->now = 1000000;
    f->timer_at = -1;
    the_fake = f;
    if (redlease_client_new(&f->c, o) != REDLEASE_OK) {
        f->c = NULL;
        return;
    }
    f->tc = f->c;
    rdl_client_set_transport_factory(f->c, fake_factory);
    redlease_client_set_clock(f->c, fake_clock, f);
    if (redlease_client_attach_loop(f->c, &fake_loop, f) != REDLEASE_OK) {
        redlease_client_free(f->c);
        f->c = NULL;
    }
}

const char *fake_sha(int i)
{
    static char sha[RDL_SCRIPT_COUNT][41];
    rdl_sha1_hex(rdl_script_src[i], strlen(rdl_script_src[i]), sha[i]);
    return sha[i];
}

void fake_connect(fake *f)
{
    fake_connect_raw(f);
    fake_answer_handshake(f);
    fake_run(f);
}

/* ROLE's answer: [role, ...], the rest left out (the core reads the first). */
static void reply_role(fake *f, const char *role)
{
    rdl_reply elem[1] = {{.type = RDL_REPLY_STRING, .str = role, .len = strlen(role)}};
    rdl_reply r = {.type = RDL_REPLY_ARRAY, .elements = 1, .element = elem};
    answer(f, &r);
}

/* COMMAND INFO DELIFEQ DELEX: a command's entry (its name is enough for
 * the core) or nil for each. */
static rdl_reply *probe_answer(int native, rdl_reply elem[2], rdl_reply name[2], rdl_reply *out)
{
    static const char *names[2] = {"delifeq", "delex"};
    for (int i = 0; i < 2; i++) {
        name[i] = (rdl_reply){.type = RDL_REPLY_STRING, .str = names[i], .len = strlen(names[i])};
        elem[i] = native & (1 << i) ? (rdl_reply){.type = RDL_REPLY_ARRAY, .elements = 1, .element = &name[i]}
                                    : (rdl_reply){.type = RDL_REPLY_NIL};
    }
    *out = (rdl_reply){.type = RDL_REPLY_ARRAY, .elements = 2, .element = elem};
    return out;
}

static int is_probe(const fake_cmd *cmd) { return strcmp(cmd->argv[0], "COMMAND") == 0; }
/* The handshake's EVAL of "return 1": does the server run scripts for us. */
static int is_scripts_probe(const fake_cmd *cmd)
{
    return cmd->argc == 3 && strcmp(cmd->argv[0], "EVAL") == 0 && strcmp(cmd->argv[1], "return 1") == 0;
}
static int is_time(const fake_cmd *cmd) { return strcmp(cmd->argv[0], "TIME") == 0; }
static int is_info(const fake_cmd *cmd) { return strcmp(cmd->argv[0], "INFO") == 0; }

/* INFO server's answer, as Redis words it, with the side's uptime (0: a
 * day); NOPERM when it is negative (an ACL without @dangerous). */
static void reply_info(fake_side *s)
{
    if (s->uptime_s < 0) {
        fake_link_reply_err(s, "NOPERM User default has no permissions to run the 'info' command");
        return;
    }
    char text[160];
    int n = snprintf(text, sizeof text,
                     "# Server\r\nredis_version:7.0.15\r\nprocess_id:1\r\nuptime_in_seconds:%ld\r\n"
                     "uptime_in_days:0\r\n",
                     s->uptime_s ? s->uptime_s : 86400L);
    fake_link_reply(s, &(rdl_reply){.type = RDL_REPLY_STRING, .str = text, .len = (size_t)n});
}

/* TIME's answer, [seconds, microseconds]: the fake server's clock is the
 * virtual one plus FAKE_SERVER_CLOCK_MS. */
static rdl_reply *time_answer(const fake *f, char text[2][24], rdl_reply elem[2], rdl_reply *out)
{
    int64_t ms = FAKE_SERVER_CLOCK_MS + f->now;
    snprintf(text[0], 24, "%lld", (long long)(ms / 1000));
    snprintf(text[1], 24, "%lld", (long long)(ms % 1000 * 1000));
    for (int i = 0; i < 2; i++)
        elem[i] = (rdl_reply){.type = RDL_REPLY_STRING, .str = text[i], .len = strlen(text[i])};
    *out = (rdl_reply){.type = RDL_REPLY_ARRAY, .elements = 2, .element = elem};
    return out;
}

void fake_reply_time(fake *f)
{
    char text[2][24];
    rdl_reply elem[2], r;
    answer(f, time_answer(f, text, elem, &r));
}

void fake_read_done(fake *f) { rdl_conn_on_read_done(&f->tc->main.conn); }
void fake_read_begin(fake *f) { rdl_conn_read_begin(&f->tc->main.conn); }
void fake_read_end(fake *f) { rdl_conn_read_end(&f->tc->main.conn); }

void fake_reply_probe(fake *f, int native)
{
    rdl_reply elem[2], name[2], r;
    answer(f, probe_answer(native, elem, name, &r));
}

void fake_answer_handshake(fake *f)
{
    while (fake_peek(f)) {
        fake_cmd *cmd = fake_peek(f);
        rdl_reply elem[2], name[2], r;
        if (strcmp(cmd->argv[0], "ROLE") == 0)
            reply_role(f, f->role ? f->role : "master");
        else if (is_time(cmd))
            fake_reply_time(f);
        else if (is_probe(cmd))
            answer(f, probe_answer(f->native, elem, name, &r));
        else if (is_scripts_probe(cmd) && f->scripts_refused)
            fake_reply_err(f, f->scripts_refused);
        else if (is_scripts_probe(cmd))
            fake_reply_int(f, 1);
        else
            fake_reply_status(f, strcmp(cmd->argv[0], "PING") == 0 ? "PONG" : "OK");
    }
}

void fake_connect_raw(fake *f)
{
    f->connecting = 0;
    f->connected = 1;
    rdl_conn_on_connected(&f->c->main.conn, REDLEASE_OK, NULL);
}

void fake_connect_fail(fake *f)
{
    f->connecting = 0;
    rdl_conn_on_connected(&f->c->main.conn, REDLEASE_ECONN, "connection refused (fake)");
}

void fake_start(fake *f, const redlease_client_options *o)
{
    fake_attach(f, o);
    if (f->c) fake_connect(f);
}

void fake_run(fake *f)
{
    for (int guard = 0; f->c && f->timer_at >= 0 && f->timer_at <= f->now; guard++) {
        if (guard > 100000) abort(); /* a timer that never stops firing is a bug */
        f->timer_at = -1;
        redlease_client *c = f->c;
        redlease_client_on_timer(c);
    }
}

void fake_until(fake *f, int64_t t)
{
    fake_run(f);
    while (f->c && f->timer_at >= 0 && f->timer_at <= t) {
        if (f->timer_at > f->now) f->now = f->timer_at;
        fake_run(f);
    }
    if (t > f->now) f->now = t;
    fake_run(f);
}

void fake_advance(fake *f, int64_t ms) { fake_until(f, f->now + ms); }

fake_cmd *fake_peek(fake *f) { return f->head < f->ncmds ? &f->cmds[f->head] : NULL; }
int fake_pending(const fake *f) { return f->ncmds - f->head; }

void fake_reply_status(fake *f, const char *s)
{
    rdl_reply r = {.type = RDL_REPLY_STATUS, .str = s, .len = strlen(s)};
    answer(f, &r);
}
void fake_reply_nil(fake *f)
{
    rdl_reply r = {.type = RDL_REPLY_NIL};
    answer(f, &r);
}
void fake_reply_int(fake *f, long long v)
{
    rdl_reply r = {.type = RDL_REPLY_INTEGER, .integer = v};
    answer(f, &r);
}
void fake_reply_err(fake *f, const char *s)
{
    rdl_reply r = {.type = RDL_REPLY_ERROR, .str = s, .len = strlen(s)};
    answer(f, &r);
}
void fake_reply_str(fake *f, const char *s)
{
    rdl_reply r = {.type = RDL_REPLY_STRING, .str = s, .len = strlen(s)};
    answer(f, &r);
}
void fake_reply_ints(fake *f, int n, const long long *v)
{
    rdl_reply elem[RDL_REPLY_MAX_ELEMENTS] = {{0}};
    for (int i = 0; i < n && i < RDL_REPLY_MAX_ELEMENTS; i++) {
        elem[i].type = RDL_REPLY_INTEGER;
        elem[i].integer = v[i];
    }
    rdl_reply r = {.type = RDL_REPLY_ARRAY, .elements = (size_t)n, .element = elem};
    answer(f, &r);
}

void fake_reply(fake *f, const rdl_reply *r) { answer(f, r); }

void fake_reply_raw(fake *f, const struct redisReply *reply)
{
    rdl_reply r;
    rdl_reply_buf buf;
    rdl_hiredis_convert_reply(reply, &r, &buf);
    answer(f, &r);
    rdl_reply_buf_free(&buf);
}

void fake_break(fake *f)
{
    f->connected = f->connecting = 0;
    fail_pending(f);
    rdl_conn_on_disconnected(&f->tc->main.conn, REDLEASE_ECONN, "connection reset (fake)");
}

void fake_cmd_free(fake_cmd *c)
{
    for (int j = 0; j < c->argc; j++) free(c->argv[j]);
    free(c->argv);
    c->argv = NULL;
}

void fake_free(fake *f)
{
    if (f->c) redlease_client_free(f->c);
    f->c = NULL;
    for (int i = 0; i < f->ncmds; i++)
        fake_cmd_free(&f->cmds[i]);
    f->ncmds = f->head = 0;
    for (int k = -1; k < FAKE_PEERS; k++) {
        fake_side *s = k < 0 ? &f->side : &f->peers[k];
        for (int i = 0; i < s->ncmds; i++)
            fake_cmd_free(&s->cmds[i]);
        s->ncmds = s->head = 0;
    }
}

/* ------------------------------------------------------------ allocator */

typedef union header {
    size_t size;
    max_align_t align;
} header;

static long live, count, fail_at;

static void *counting_malloc(size_t n)
{
    count++;
    if (fail_at && count == fail_at) return NULL;
    header *h = malloc(sizeof *h + n);
    if (!h) return NULL;
    h->size = n;
    live++;
    return h + 1;
}

static void counting_free(void *p)
{
    if (!p) return;
    live--;
    free((header *)p - 1);
}

static void *counting_realloc(void *p, size_t n)
{
    if (!p) return counting_malloc(n);
    count++;
    if (fail_at && count == fail_at) return NULL;
    header *h = realloc((header *)p - 1, sizeof *h + n);
    if (!h) return NULL;
    h->size = n;
    return h + 1;
}

void fake_alloc_install(void)
{
    redlease_set_allocator(counting_malloc, counting_realloc, counting_free);
}
long fake_alloc_live(void) { return live; }
long fake_alloc_count(void) { return count; }
void fake_alloc_fail_at(long n) { fail_at = n ? count + n : 0; }

/* ------------------------------------------------------------ any link */

fake_cmd *fake_link_peek(fake_side *s)
{
    while (s->head < s->ncmds && (s->cmds[s->head].answered || s->cmds[s->head].subscribed)) {
        if (s->cmds[s->head].answered) {
            s->head++;
        } else { /* a subscription: look past it */
            for (int i = s->head + 1; i < s->ncmds; i++)
                if (!s->cmds[i].answered && !s->cmds[i].subscribed) return &s->cmds[i];
            return NULL;
        }
    }
    return s->head < s->ncmds ? &s->cmds[s->head] : NULL;
}

void fake_link_reply(fake_side *s, const rdl_reply *r)
{
    fake_cmd *cmd = fake_link_peek(s);
    if (!cmd) return;
    cmd->answered = 1;
    rdl_conn_on_reply(s->cn, cmd->req, r);
}

void fake_link_reply_status(fake_side *s, const char *text)
{
    rdl_reply r = {.type = RDL_REPLY_STATUS, .str = text, .len = strlen(text)};
    fake_link_reply(s, &r);
}

void fake_link_reply_int(fake_side *s, long long v)
{
    rdl_reply r = {.type = RDL_REPLY_INTEGER, .integer = v};
    fake_link_reply(s, &r);
}

void fake_link_reply_err(fake_side *s, const char *text)
{
    rdl_reply r = {.type = RDL_REPLY_ERROR, .str = text, .len = strlen(text)};
    fake_link_reply(s, &r);
}

void fake_link_connect(fake *f, fake_side *s)
{
    s->connecting = 0;
    s->connected = 1;
    rdl_conn_on_connected(s->cn, REDLEASE_OK, NULL);
    for (fake_cmd *cmd; (cmd = fake_link_peek(s)) &&
                        (strcmp(cmd->argv[0], "AUTH") == 0 || strcmp(cmd->argv[0], "SELECT") == 0 ||
                         strcmp(cmd->argv[0], "PING") == 0 || is_probe(cmd) || is_time(cmd) ||
                         is_info(cmd) || is_scripts_probe(cmd));) {
        rdl_reply elem[2], name[2], r;
        char text[2][24];
        if (is_info(cmd))
            reply_info(s);
        else if (is_time(cmd))
            fake_link_reply(s, time_answer(f, text, elem, &r));
        else if (is_probe(cmd))
            fake_link_reply(s, probe_answer(0, elem, name, &r));
        else if (is_scripts_probe(cmd) && s->scripts_refused)
            fake_link_reply_err(s, s->scripts_refused);
        else if (is_scripts_probe(cmd))
            fake_link_reply(s, &(rdl_reply){.type = RDL_REPLY_INTEGER, .integer = 1});
        else
            fake_link_reply_status(s, strcmp(cmd->argv[0], "PING") == 0 ? "PONG" : "OK");
    }
    fake_run(f);
}

void fake_link_break(fake_side *s)
{
    s->connected = s->connecting = 0;
    side_fail_all(s);
    rdl_conn_on_disconnected(s->cn, REDLEASE_ECONN, "connection reset (fake link)");
}

fake_side *fake_link_at(fake *f, int port)
{
    if (f->side.cn && f->side.port == port) return &f->side;
    for (int i = 0; i < FAKE_PEERS; i++)
        if (f->peers[i].cn && f->peers[i].port == port) return &f->peers[i];
    return NULL;
}

/* ------------------------------------------------------ the side link's API */

fake_cmd *fake_side_peek(fake *f) { return fake_link_peek(&f->side); }

static void side_answer(fake *f, const rdl_reply *r) { fake_link_reply(&f->side, r); }

void fake_side_connect(fake *f) { fake_link_connect(f, &f->side); }

void fake_side_connect_fail(fake *f)
{
    f->side.connecting = 0;
    rdl_conn_on_connected(f->side.cn, REDLEASE_ECONN, "connection refused (fake side)");
}

void fake_side_reply_addr(fake *f, const char *host, const char *port)
{
    rdl_reply elem[2] = {{.type = RDL_REPLY_STRING, .str = host, .len = strlen(host)},
                         {.type = RDL_REPLY_STRING, .str = port, .len = strlen(port)}};
    rdl_reply r = {.type = RDL_REPLY_ARRAY, .elements = 2, .element = elem};
    side_answer(f, &r);
}

void fake_side_reply_nil(fake *f)
{
    rdl_reply r = {.type = RDL_REPLY_NIL};
    side_answer(f, &r);
}

void fake_side_reply_err(fake *f, const char *s) { fake_link_reply_err(&f->side, s); }

/* Pushes [kind, channel, third] on the link's first open subscription. */
static void link_push(fake_side *s, const char *kind, const char *channel, const rdl_reply *third)
{
    for (int i = 0; i < s->ncmds; i++) {
        if (!s->cmds[i].subscribed || s->cmds[i].answered) continue;
        rdl_reply elem[3] = {{.type = RDL_REPLY_STRING, .str = kind, .len = strlen(kind)},
                             {.type = RDL_REPLY_STRING, .str = channel, .len = strlen(channel)},
                             *third};
        rdl_reply r = {.type = RDL_REPLY_ARRAY, .elements = 3, .element = elem};
        rdl_conn_on_push(s->cn, s->cmds[i].req, &r);
        return;
    }
}

void fake_link_message(fake_side *s, const char *channel, const char *text)
{
    rdl_reply t = {.type = RDL_REPLY_STRING, .str = text, .len = strlen(text)};
    link_push(s, "message", channel, &t);
}

void fake_link_subscribed(fake_side *s)
{
    for (int i = 0; i < s->ncmds; i++) {
        if (!s->cmds[i].subscribed || s->cmds[i].answered) continue;
        rdl_reply one = {.type = RDL_REPLY_INTEGER, .integer = 1};
        link_push(s, "subscribe", s->cmds[i].argv[1], &one);
        return;
    }
}

void fake_side_push(fake *f, const char *channel, const char *text)
{
    fake_link_message(&f->side, channel, text);
}

void fake_side_break(fake *f) { fake_link_break(&f->side); }
