/* SPDX-License-Identifier: MIT */
/* Error replies, classified by their code (the first word), in one table.
 * Unknown codes are definite: a lock that meets an error nobody foresaw
 * says so at once instead of retrying it for the whole wait budget (or for
 * ever with REDLEASE_WAIT_FOREVER). */
#include <string.h>

#include "errors.h"
#include "redlease.h"

enum { DEFINITE = 0, TRANSIENT = 1 };

static const struct {
    const char *code;
    int status, transient, reconnect;
} table[] = {
    /* The server cannot serve the write now; it will. */
    {"LOADING", REDLEASE_EREDIS, TRANSIENT, 0},     /* loading the dataset */
    {"BUSY", REDLEASE_EREDIS, TRANSIENT, 0},        /* a script or module runs long */
    {"MASTERDOWN", REDLEASE_EREDIS, TRANSIENT, 0},  /* replica lost its primary */
    {"TRYAGAIN", REDLEASE_EREDIS, TRANSIENT, 0},    /* Cluster: slot being migrated */
    {"CLUSTERDOWN", REDLEASE_EREDIS, TRANSIENT, 0}, /* Cluster: slots uncovered */
    {"OOM", REDLEASE_EREDIS, TRANSIENT, 0},         /* maxmemory reached */
    {"MISCONF", REDLEASE_EREDIS, TRANSIENT, 0},     /* RDB save failing */
    {"NOREPLICAS", REDLEASE_EREDIS, TRANSIENT, 0},  /* min-replicas-to-write unmet */
    {"NOSCRIPT", REDLEASE_EREDIS, TRANSIENT, 0},    /* resent by EVAL before this counts */
    /* Ours (src/quorum.c): no majority, each member for its own reason. */
    {"QUORUM", REDLEASE_EQUORUM, TRANSIENT, 0},
    /* This connection reaches a replica now (a failover happened). */
    {"READONLY", REDLEASE_EREDIS, TRANSIENT, 1},
    /* The server wants credentials this connection no longer has. */
    {"NOAUTH", REDLEASE_EAUTH, DEFINITE, 1},
    {"WRONGPASS", REDLEASE_EAUTH, DEFINITE, 0},
    {"NOPERM", REDLEASE_EPERM, DEFINITE, 0},
    {"WRONGTYPE", REDLEASE_EKIND, DEFINITE, 0}, /* the resource is another kind */
    {"KIND", REDLEASE_EKIND, DEFINITE, 0}, /* ours (src/scripts.c): the same, and which */
};

/* "-ERR ..." texts that are not plain definite errors. */
static const struct {
    const char *text;
    int status, transient;
} err_table[] = {
    {"ERR max number of clients reached", REDLEASE_EREDIS, TRANSIENT},
    {"ERR AUTH", REDLEASE_EAUTH, DEFINITE},             /* no password configured */
    {"ERR invalid password", REDLEASE_EAUTH, DEFINITE}, /* Redis before 6 */
    {"ERR Client sent AUTH", REDLEASE_EAUTH, DEFINITE}, /* Redis before 6 */
    {"ERR DB index is out of range", REDLEASE_ECONFIG, DEFINITE},
    {"ERR invalid DB index", REDLEASE_ECONFIG, DEFINITE},
    {"ERR SELECT is not allowed in cluster mode", REDLEASE_ECONFIG, DEFINITE},
};

static int starts_with(const char *text, size_t n, const char *p)
{
    size_t k = strlen(p);
    return n >= k && memcmp(text, p, k) == 0;
}

static int has(const char *text, size_t n, const char *p)
{
    size_t k = strlen(p);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(text + i, p, k) == 0) return 1;
    return 0;
}

/* Errors about the command, not its keys: another command may do. */
static const char *const refusals[] = {
    "ERR unknown command",
    "ERR syntax error",
    "ERR wrong number of arguments",
    "ERR Could not find scripting engine", /* Valkey >= 9.1 without its Lua module: EVAL */
};

static int refused(const char *text, size_t n)
{
    if (starts_with(text, n, "NOPERM")) return has(text, n, "to run the");
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++)
        if (starts_with(text, n, refusals[i])) return 1;
    return 0;
}

/* ASCII lower case of ch. */
static char lower(char ch) { return ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch; }

/* text has p (lower case) in any case. */
static int has_nocase(const char *text, size_t n, const char *p)
{
    size_t k = strlen(p);
    for (size_t i = 0; i + k <= n; i++) {
        size_t j = 0;
        while (j < k && lower(text[i + j]) == p[j]) j++;
        if (j == k) return 1;
    }
    return 0;
}

int rdl_error_refuses_scripts(const char *text, size_t n)
{
    if (!text || !refused(text, n) || has(text, n, " script: ")) return 0;
    return has_nocase(text, n, "'eval") || has(text, n, "scripting engine");
}

rdl_error_class rdl_error_classify(const char *text, size_t n)
{
    rdl_error_class e = {REDLEASE_EREDIS, DEFINITE, 0, 0, 0, 0, 0, 0, 0};
    if (!text) return e;
    e.refused = refused(text, n);
    size_t code_len = 0;
    while (code_len < n && text[code_len] != ' ') code_len++;
    e.redirect = (code_len == 5 && memcmp(text, "MOVED", 5) == 0) ||
                 (code_len == 3 && memcmp(text, "ASK", 3) == 0);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strlen(table[i].code) == code_len && memcmp(text, table[i].code, code_len) == 0) {
            e.status = table[i].status;
            e.transient = table[i].transient;
            e.reconnect = table[i].reconnect;
            /* another type, or (ours) another kind: not our token */
            e.wrongtype = table[i].status == REDLEASE_EKIND;
            e.noscript = strcmp(table[i].code, "NOSCRIPT") == 0;
            e.oom = strcmp(table[i].code, "OOM") == 0;
            e.multikey = strcmp(table[i].code, "TRYAGAIN") == 0;
            return e;
        }
    }
    for (size_t i = 0; i < sizeof err_table / sizeof err_table[0]; i++) {
        if (starts_with(text, n, err_table[i].text)) {
            e.status = err_table[i].status;
            e.transient = err_table[i].transient;
            return e;
        }
    }
    return e;
}
