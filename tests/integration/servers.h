/* SPDX-License-Identifier: MIT */
/* redis-servers a test starts for itself, beside the harness's one: a TLS
 * server (test_tls.c), a primary and its replicas (test_replication.c).
 * Each runs daemonized on 127.0.0.1 on a port of its own (20000-49999,
 * below the 55535 a Cluster bus port allows), without persistence, in a
 * folder of its own under $REDLEASE_TEST_DIR (the harness removes it), and
 * is stopped by the pid from its pid file. Header-only, as rig.h. */
#ifndef REDLEASE_TEST_SERVERS_H
#define REDLEASE_TEST_SERVERS_H

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

typedef struct srv {
    int port, pid;
    char dir[512]; /* its folder: pid file, log, replication files */
} srv;

/* Starts REDIS_SERVER (default redis-server) as name, listening with
 * port_option ("--port", or "--tls-port" with "--port 0" in extra) on
 * port, or a free one (port 0), with conf (NULL: none) as its configuration
 * file (a Sentinel needs one it can rewrite) and the options in extra
 * (shell words). A plain server is waited for until it answers PING. 0,
 * or -1. */
static inline int srv_start_at(srv *s, const char *name, const char *conf, const char *port_option,
                               const char *extra, int port)
{
    const char *server = getenv("REDIS_SERVER");
    const char *top = getenv("REDLEASE_TEST_DIR");
    memset(s, 0, sizeof *s);
    if (!server || !*server) server = "redis-server"; /* as the harness */
    if (!top) return -1;
    snprintf(s->dir, sizeof s->dir, "%s/%s", top, name);
    mkdir(s->dir, 0700);
    char cmd[8192], pidfile[600], conffile[600] = "";
    snprintf(pidfile, sizeof pidfile, "%s/redis.pid", s->dir);
    if (conf) {
        snprintf(conffile, sizeof conffile, "'%s/redis.conf'", s->dir);
        char path[600];
        snprintf(path, sizeof path, "%s/redis.conf", s->dir);
        FILE *f = fopen(path, "w");
        if (!f || fputs(conf, f) < 0) {
            if (f) fclose(f);
            return -1;
        }
        fclose(f);
    }
    static int salt;
    for (int attempt = 0; attempt < 20; attempt++) {
        s->port = port ? port : 20000 + (int)((getpid() * 7919L + (salt++) * 104729L) % 30000);
        snprintf(cmd, sizeof cmd,
                 "'%s' %s %s %d --bind 127.0.0.1 --save '' --appendonly no --dir '%s' "
                 "--daemonize yes --pidfile '%s' --logfile '%s/redis.log' %s",
                 server, conffile, port_option, s->port, s->dir, pidfile, s->dir,
                 extra ? extra : "");
        if (port) attempt = 19; /* that port or nothing */
        unlink(pidfile);
        if (system(cmd) != 0) continue;
        for (int i = 0; i < 300 && access(pidfile, F_OK) != 0; i++) usleep(10000);
        usleep(100000); /* listening, or gone for a port in use */
        FILE *pf = fopen(pidfile, "r");
        s->pid = 0;
        if (pf) {
            if (fscanf(pf, "%d", &s->pid) != 1) s->pid = 0;
            fclose(pf);
        }
        if (s->pid <= 0 || kill(s->pid, 0) != 0) continue;
        if (strcmp(port_option, "--port") != 0) return 0;
        for (int i = 0; i < 300; i++) {
            /* ours, not another test's server that took the port first
             * (both saw it free; ours then aborts, theirs answers) */
            char want[32];
            snprintf(want, sizeof want, "process_id:%d\r", s->pid);
            redisContext *c = redisConnect("127.0.0.1", s->port);
            redisReply *r = c && !c->err ? redisCommand(c, "INFO server") : NULL;
            int up = r && r->type == REDIS_REPLY_STRING && strstr(r->str, want) != NULL;
            if (r) freeReplyObject(r);
            if (c) redisFree(c);
            if (up) return 0;
            usleep(10000);
        }
        kill(s->pid, SIGKILL);
    }
    s->pid = 0;
    return -1;
}

static inline int srv_start_conf(srv *s, const char *name, const char *conf,
                                 const char *port_option, const char *extra)
{
    return srv_start_at(s, name, conf, port_option, extra, 0);
}

static inline int srv_start(srv *s, const char *name, const char *port_option, const char *extra)
{
    return srv_start_conf(s, name, NULL, port_option, extra);
}

/* A command on a connection of its own, answered within 2 s (a stopped
 * server does not answer: NULL). The caller frees the reply. */
static inline redisReply *srv_cmd(const srv *s, const char *fmt, ...)
{
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, tv);
    if (!c || c->err) {
        if (c) redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

/* The string a command answers ("" for anything else) in buf. */
static inline const char *srv_str(const srv *s, char *buf, size_t size, const char *fmt,
                                  const char *arg)
{
    redisReply *r = srv_cmd(s, fmt, arg);
    snprintf(buf, size, "%s",
             r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) ? r->str : "");
    if (r) freeReplyObject(r);
    return buf;
}

/* Gone, or a zombie nobody reaped yet (pid 1 of a container may never). */
static inline int srv_gone(int pid)
{
    char path[64], stat[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return kill(pid, 0) != 0;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *p = strrchr(stat, ')'); /* "pid (comm) S ..." */
    return p && p[1] == ' ' && p[2] == 'Z';
}

/* Every case starts its own servers (start() makes them, 0 on success);
 * in CI a failure to start fails the case, with what it needed to start. */
#define NEED_STARTED(start, what)                                                        \
    do {                                                                                 \
        if (start()) {                                                                   \
            CHECK(!what);                                                                \
            return;                                                                      \
        }                                                                                \
    } while (0)

/* SIGKILL, and wait until it is gone. Idempotent. */
static inline void srv_kill(srv *s)
{
    if (s->pid <= 0) return;
    kill(s->pid, SIGKILL);
    for (int i = 0; i < 300 && !srv_gone(s->pid); i++) usleep(10000);
    s->pid = 0;
}

/* SIGKILL, then the same server again on its port and in its folder
 * (started as name), without its data: nothing is persisted, so it comes
 * back empty, as a server without persistence does after a crash. 0, or
 * -1 (the port was taken meanwhile). */
static inline int srv_restart_empty(srv *s, const char *name, const char *extra)
{
    int port = s->port;
    srv_kill(s);
    return srv_start_at(s, name, NULL, "--port", extra, port);
}

#endif
