/* SPDX-License-Identifier: MIT */
/* TLS to a real redis-server: the test starts its own, with --tls-port and
 * client certificates required, on a throwaway PKI that
 * tests/support/tls-certs.sh makes (a CA, the server's certificate for
 * localhost and 127.0.0.1, a client certificate, and a CA nobody used).
 * A lease over TLS; then each way TLS can fail, each with its status: a
 * CA that did not sign the server (REDLEASE_ETLS, at once, also for a wait
 * for ever), a certificate that expired (a second server), a name the
 * certificate does not carry, no client
 * certificate, a CA file that does not exist; TLS to a plaintext port and
 * plaintext to the TLS port are never OK (the connection times out or is
 * reset); a Sentinel over TLS that names the TLS server (sentinel_tls),
 * and one no trusted CA signed. In a build without TLS the one
 * case is that asking for TLS is REDLEASE_ENOTSUP, never plaintext.
 * Runs on the poll() loop through tls.itest (run-integration.sh starts the
 * harness's plaintext server, which the TLS-to-plaintext case uses). */
#define _GNU_SOURCE /* memmem, in rig.h */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rig.h"
#include "servers.h"

static char pki[512];
static int tls_port, expired_port; /* the second serves a certificate that expired */

static const char *file_of(const char *name)
{
    static char buf[4][700];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s/%s", pki, name);
    return buf[i];
}

/* TCP to 127.0.0.1:port; TLS trusting ca (NULL: none asked), with the
 * client certificate when cert. */
static redlease_client_options tls_opts(int port, const char *ca, int cert)
{
    redlease_client_options co = copts_tcp(port);
    if (ca) {
        co.tls = 1;
        co.tls_ca_file = file_of(ca);
        if (cert) {
            co.tls_cert_file = file_of("client.crt");
            co.tls_key_file = file_of("client.key");
        }
    }
    return co;
}

/* An acquire that waits for ever must end at once with status, the
 * client's error text holding text. */
static void expect_refused(redlease_client_options co, int status, const char *text)
{
    CHECK(expect_acquire_fails(co, REDLEASE_WAIT_FOREVER, status, text) >= 1);
}

/* A lease over TLS: acquired, renewed (TTL 600 ms, renewals every 200),
 * released; the server saw the key (through the same TLS). */
static void test_tls_lease_over_tls(void)
{
    obs o = {0};
    redlease_client_options co = tls_opts(tls_port, "ca.crt", 1);
    redlease_client *c = client_with(&co, &o);
    acquire(c, &o, "tls-lease", lopts(600, 0, 0));
    run_until(&o.acq, 3000, NULL);
    CHECK_EQ(o.acq_st, REDLEASE_OK);
    CHECK(redlease_lock_held(o.lk));
    run_for(900, NULL);
    CHECK(o.events[REDLEASE_EV_RENEWED] >= 2);
    CHECK(redlease_lock_held(o.lk));
    CHECK_EQ(o.lost, 0);
    release(&o, NULL);
    CHECK_EQ(o.rel_st, REDLEASE_OK);
    finish(c, &o);
}

static void test_tls_wrong_ca(void)
{
    expect_refused(tls_opts(tls_port, "other-ca.crt", 1), REDLEASE_ETLS, "certificate");
}

static void test_tls_certificate_expired(void)
{
    expect_refused(tls_opts(expired_port, "ca.crt", 1), REDLEASE_ETLS, "expired");
}

static void test_tls_name_not_in_the_certificate(void)
{
    redlease_client_options co = tls_opts(tls_port, "ca.crt", 1);
    co.tls_server_name = "redis.example";
    expect_refused(co, REDLEASE_ETLS, "hostname mismatch");
}

/* insecure: the wrong CA and the wrong name are not checked. */
static void test_tls_insecure_skips_verification(void)
{
    obs o = {0};
    redlease_client_options co = tls_opts(tls_port, "other-ca.crt", 1);
    co.tls_server_name = "redis.example";
    co.tls_insecure = 1;
    redlease_client *c = client_with(&co, &o);
    acquire(c, &o, "tls-insecure", lopts(1000, 0, 0));
    run_until(&o.acq, 3000, NULL);
    CHECK_EQ(o.acq_st, REDLEASE_OK);
    release(&o, NULL);
    finish(c, &o);
}

/* The server requires a client certificate. */
static void test_tls_without_client_certificate(void)
{
    expect_refused(tls_opts(tls_port, "ca.crt", 0), REDLEASE_ETLS, "TLS");
}

static void test_tls_ca_file_missing(void)
{
    expect_refused(tls_opts(tls_port, "no-such-ca.crt", 1), REDLEASE_ETLS, "no-such-ca.crt");
}

/* TLS to the harness's plaintext port: Redis takes the ClientHello for
 * the start of a command and never answers; the handshake times out, and
 * the wait budget ends the acquire. Never OK. */
static void test_tls_to_a_plaintext_port(void)
{
    const char *port = getenv("REDLEASE_TEST_PORT");
    if (!port) SKIP_TEST("REDLEASE_TEST_PORT not set");
    obs o = {0};
    redlease_client_options co = tls_opts(atoi(port), "ca.crt", 1);
    co.connect_timeout_ms = co.command_timeout_ms = 300 * S;
    redlease_client *c = client_with(&co, &o);
    acquire(c, &o, "tls-to-plain", lopts(1000, 1000, 0));
    run_until(&o.acq, 4000, o.lk);
    printf("# %s: %s\n", redlease_strerror(o.acq_st), redlease_client_errstr(c));
    CHECK_EQ(o.acq, 1);
    CHECK(o.acq_st == REDLEASE_ECONN || o.acq_st == REDLEASE_ETIMEDOUT || o.acq_st == REDLEASE_ETLS);
    CHECK(o.events[REDLEASE_EV_DISCONNECTED] >= 1);
    release(&o, o.lk);
    finish(c, &o);
}

/* Plaintext to the TLS port: never a lease; the connection fails. */
static void test_plaintext_to_the_tls_port(void)
{
    obs o = {0};
    redlease_client_options co = tls_opts(tls_port, NULL, 0);
    redlease_client *c = client_with(&co, &o);
    acquire(c, &o, "tls-plain", lopts(1000, 1500, 0));
    run_until(&o.acq, 4000, o.lk);
    printf("# %s: %s\n", redlease_strerror(o.acq_st), redlease_client_errstr(c));
    CHECK_EQ(o.acq, 1);
    CHECK(o.acq_st == REDLEASE_ECONN || o.acq_st == REDLEASE_ETIMEDOUT);
    release(&o, o.lk);
    finish(c, &o);
}

/* A build without TLS refuses to be asked for it. */
static void test_tls_not_in_this_build(void)
{
    redlease_client_options co = tls_opts(6379, "ca.crt", 0);
    redlease_client *c = NULL;
    CHECK_EQ(redlease_tls_available(), 0);
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_ENOTSUP);
    CHECK(c == NULL);
    co.tls = 0; /* a CA file without tls would be ignored: refused */
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    co.tls_ca_file = NULL;
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_OK);
    redlease_client_free(c);
}

/* A TLS server with the CA's certificate file cert (servers.h), conf
 * (NULL: none) as its configuration, extra options added; 0 or -1. */
static int start_tls_on(srv *s, const char *name, const char *cert, const char *conf,
                        const char *extra)
{
    char args[4096];
    snprintf(args, sizeof args,
             "--port 0 --tls-cert-file '%s' --tls-key-file '%s' --tls-ca-cert-file '%s' "
             "--tls-auth-clients yes %s",
             file_of(cert), file_of("server.key"), file_of("ca.crt"), extra ? extra : "");
    return srv_start_conf(s, name, conf, "--tls-port", args);
}

/* The PKI, then the TLS servers on it. 0, or -1. */
static int start_tls_server(srv *tls, srv *expired)
{
    const char *dir = getenv("REDLEASE_TEST_DIR");
    const char *src = getenv("REDLEASE_SRCDIR");
    if (!dir || !src) return -1;
    snprintf(pki, sizeof pki, "%s/pki", dir);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "sh '%s/tests/support/tls-certs.sh' '%s'", src, pki);
    if (system(cmd) != 0) return -1;
    if (start_tls_on(tls, "tls", "server.crt", NULL, NULL) ||
        start_tls_on(expired, "tls-expired", "expired.crt", NULL, NULL))
        return -1;
    tls_port = tls->port;
    expired_port = expired->port;
    return 0;
}

/* Sentinel over TLS, watching the TLS server: the client reaches the
 * Sentinel and then the primary it names, both over TLS, both verified;
 * a CA that signed neither is refused at once (ETLS). */
static void test_tls_through_sentinel(void)
{
    srv sentinel;
    char conf[128];
    snprintf(conf, sizeof conf, "sentinel monitor tlsm 127.0.0.1 %d 1\n", tls_port);
    if (start_tls_on(&sentinel, "tls-sentinel", "server.crt", conf,
                     "--tls-replication yes --sentinel")) {
        CHECK(!"a TLS Sentinel started");
        return;
    }
    char list[64];
    snprintf(list, sizeof list, "127.0.0.1:%d", sentinel.port);
    obs o = {0};
    redlease_client_options co = tls_opts(0, "ca.crt", 1);
    co.host = NULL; /* the Sentinel says where */
    co.sentinel_addrs = list;
    co.topology = REDLEASE_TOPOLOGY_SENTINEL;
    co.sentinel_master_name = "tlsm";
    co.sentinel_tls = 1;
    redlease_client *c = client_with(&co, &o);
    acquire(c, &o, "tls-sentinel", lopts(1000, 3000, 0));
    run_until(&o.acq, 4000, NULL);
    printf("# through a TLS Sentinel: %s %s\n", redlease_strerror(o.acq_st), redlease_client_errstr(c));
    CHECK_EQ(o.acq_st, REDLEASE_OK);
    CHECK_EQ(o.events[REDLEASE_EV_PRIMARY], 1);
    release(&o, NULL);
    finish(c, &o);

    co = tls_opts(0, "other-ca.crt", 1); /* signed no Sentinel */
    co.host = NULL; /* the Sentinel says where */
    co.sentinel_addrs = list;
    co.topology = REDLEASE_TOPOLOGY_SENTINEL;
    co.sentinel_master_name = "tlsm";
    co.sentinel_tls = 1;
    expect_acquire_fails(co, REDLEASE_WAIT_FOREVER, REDLEASE_ETLS, "Sentinel 127.0.0.1:");
    srv_kill(&sentinel);
}

int main(int argc, char **argv)
{
    if (rig_start()) return 1;
    if (!redlease_tls_available()) {
        static const test_case plain[] = {TEST_CASE(test_tls_not_in_this_build)};
        int rc = run_tests(plain, 1, argc, argv);
        rig_stop();
        return rc;
    }
    srv tls, expired;
    if (start_tls_server(&tls, &expired) != 0) {
        printf("Bail out! could not start a TLS redis-server\n");
        rig_stop();
        return 1;
    }
    printf("# TLS redis-server on 127.0.0.1:%d (pid %d)\n", tls_port, tls.pid);
    static const test_case tests[] = {
        TEST_CASE(test_tls_lease_over_tls),
        TEST_CASE(test_tls_wrong_ca),
        TEST_CASE(test_tls_certificate_expired),
        TEST_CASE(test_tls_name_not_in_the_certificate),
        TEST_CASE(test_tls_insecure_skips_verification),
        TEST_CASE(test_tls_without_client_certificate),
        TEST_CASE(test_tls_ca_file_missing),
        TEST_CASE(test_tls_to_a_plaintext_port),
        TEST_CASE(test_plaintext_to_the_tls_port),
        TEST_CASE(test_tls_through_sentinel),
    };
    int rc = run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
    srv_kill(&tls);
    srv_kill(&expired);
    rig_stop();
    return rc;
}
