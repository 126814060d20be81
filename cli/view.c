/* SPDX-License-Identifier: MIT */
/* Who holds and who waits, as status shows it (cli/view.h). */
#include "view.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* hiredis's reply as the library's (strings point into in: it must
 * outlive out); 0, or -1 out of memory (free_converted() frees what was
 * made). */
static int convert(const redisReply *in, rdl_reply *out)
{
    memset(out, 0, sizeof *out);
    switch (in->type) {
    case REDIS_REPLY_STRING: out->type = RDL_REPLY_STRING; break;
    case REDIS_REPLY_STATUS: out->type = RDL_REPLY_STATUS; break;
    case REDIS_REPLY_ERROR: out->type = RDL_REPLY_ERROR; break;
    case REDIS_REPLY_INTEGER: out->type = RDL_REPLY_INTEGER; break;
    case REDIS_REPLY_NIL: out->type = RDL_REPLY_NIL; return 0;
    case REDIS_REPLY_ARRAY: out->type = RDL_REPLY_ARRAY; break;
    default: out->type = RDL_REPLY_OTHER; return 0; /* RESP3: never asked for */
    }
    out->integer = in->integer;
    out->str = in->str;
    out->len = in->len;
    if (out->type != RDL_REPLY_ARRAY || !in->elements) return 0;
    rdl_reply *e = calloc(in->elements, sizeof *e);
    if (!e) return -1;
    out->element = e;
    out->elements = in->elements;
    for (size_t i = 0; i < in->elements; i++)
        if (convert(in->element[i], &e[i])) return -1;
    return 0;
}

static void free_converted(const rdl_reply *r)
{
    if (r->type != RDL_REPLY_ARRAY || !r->element) return;
    for (size_t i = 0; i < r->elements; i++) free_converted(&r->element[i]);
    free((void *)r->element);
}

int cli_view_read(redisReply *const got[CLI_VIEW_READS], redlease_inspection *v, unsigned *mended)
{
    rdl_reply e[CLI_VIEW_READS];
    rdl_reply top = {.type = RDL_REPLY_ARRAY, .elements = CLI_VIEW_READS, .element = e};
    memset(e, 0, sizeof e);
    *mended = 0;
    int rc = 0;
    for (int i = 0; i < CLI_VIEW_READS && !rc; i++) {
        if (got[i]->type == REDIS_REPLY_ERROR) { /* WRONGTYPE: read as no such key */
            e[i].type = i == CLI_VIEW_VALUE || i == CLI_VIEW_FENCE ? RDL_REPLY_NIL : RDL_REPLY_ARRAY;
            *mended |= 1u << i;
        } else if (convert(got[i], &e[i])) {
            rc = REDLEASE_ENOMEM;
        }
    }
    if (!rc) rc = rdl_inspect_parse(&top, v);
    if (!rc) rdl_inspect_finish(v);
    for (int i = 0; i < CLI_VIEW_READS; i++) free_converted(&e[i]);
    return rc;
}

static const char *waits_to_be(int kind)
{
    return kind == REDLEASE_KIND_SHARED ? "shared" : kind == REDLEASE_KIND_SEMAPHORE ? "semaphore" : "exclusive";
}

/* "; by LABEL (pid P on HOST)", what a holder's line ends with too. */
static void print_who(FILE *out, const char *label, const char *host, int64_t pid)
{
    if (*label || *host) fprintf(out, "; by %s (pid %" PRId64 " on %s)", label, pid, host);
}

void cli_view_print_waiters(const char *prefix, const redlease_inspection *v, int show_token)
{
    for (size_t i = 0; i < redlease_inspection_waiter_count(v); i++) {
        const redlease_waiter *w = redlease_inspection_waiter(v, i);
        printf("%swaiter: %s", prefix, waits_to_be(w->kind));
        if (w->waiting_ms >= 0) printf(", waiting %" PRId64 " ms", w->waiting_ms);
        if (show_token) printf(", token %s", w->token);
        print_who(stdout, w->label, w->host, w->pid);
        printf("\n");
    }
}

/* s as a JSON string: cleaned for display already (src/identity.h), or
 * bytes that may be anything (a resource name): what is no valid UTF-8 or
 * a control character is escaped or shown as "?". */
static void json_str(FILE *out, const char *s)
{
    char clean[4 * REDLEASE_MAX_RESOURCE + 8];
    rdl_identity_clean(clean, sizeof clean - 1, s, strlen(s), 0);
    fputc('"', out);
    for (const char *p = clean; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

static const char *kind_name(int kind)
{
    switch (kind) {
    case REDLEASE_KIND_FREE: return "free";
    case REDLEASE_KIND_MUTEX: return "mutex";
    case REDLEASE_KIND_SEMAPHORE: return "semaphore";
    case REDLEASE_KIND_SHARED: return "shared";
    }
    return "unknown";
}

/* A fence as a string (it may pass 2^53, past what a JSON number keeps
 * exactly in most readers), or null. */
static void json_fence(FILE *out, uint64_t fence)
{
    if (fence)
        fprintf(out, "\"%" PRIu64 "\"", fence);
    else
        fputs("null", out);
}

static void json_who(FILE *out, const char *token, const char *label, const char *host, int64_t pid,
                     int show_token)
{
    if (show_token) {
        fputs("\"token\":", out);
        json_str(out, token);
        fputc(',', out);
    }
    fputs("\"label\":", out);
    json_str(out, label);
    fputs(",\"host\":", out);
    json_str(out, host);
    fprintf(out, ",\"pid\":%" PRId64, pid);
}

void cli_view_print_json(FILE *out, const char *resource, const char *key, const redlease_inspection *v,
                         int held, int show_token)
{
    fputs("{\"resource\":", out);
    json_str(out, resource);
    fputs(",\"key\":", out);
    json_str(out, key);
    fprintf(out, ",\"held\":%s,\"kind\":\"%s\"", held < 0 ? "null" : held ? "true" : "false",
            kind_name(v ? redlease_inspection_kind(v) : REDLEASE_KIND_FREE));
    if (v && redlease_inspection_kind(v) == REDLEASE_KIND_SEMAPHORE)
        fprintf(out, ",\"limit\":%d", redlease_inspection_limit(v));
    fputs(",\"fence_counter\":", out);
    json_fence(out, v ? redlease_inspection_fence_counter(v) : 0);
    fprintf(out, ",\"server_ms\":%" PRId64 ",\"servers\":%d,\"answered\":%d,\"holders\":[",
            v ? redlease_inspection_server_ms(v) : 0, v ? redlease_inspection_servers(v) : 0,
            v ? redlease_inspection_answered(v) : 0);
    for (size_t i = 0; v && i < redlease_inspection_holder_count(v); i++) {
        const redlease_holder *h = redlease_inspection_holder(v, i);
        fputs(i ? ",{" : "{", out);
        json_who(out, h->token, h->label, h->host, h->pid, show_token);
        fprintf(out, ",\"acquired_at_ms\":%" PRId64 ",\"held_ms\":%" PRId64 ",\"ttl_ms\":%" PRId64 ",\"fence\":",
                h->acquired_at_ms, h->held_ms, h->ttl_ms);
        json_fence(out, h->fence);
        fprintf(out, ",\"permits\":%" PRId64 ",\"servers\":%d}", h->permits, h->servers);
    }
    fputs("],\"waiters\":[", out);
    for (size_t i = 0; v && i < redlease_inspection_waiter_count(v); i++) {
        const redlease_waiter *w = redlease_inspection_waiter(v, i);
        fputs(i ? ",{" : "{", out);
        json_who(out, w->token, w->label, w->host, w->pid, show_token);
        fprintf(out, ",\"joined_at_ms\":%" PRId64 ",\"waiting_ms\":%" PRId64 ",\"wants\":\"%s\",\"servers\":%d}",
                w->joined_at_ms, w->waiting_ms, waits_to_be(w->kind), w->servers);
    }
    fputs("]}\n", out);
    fflush(out);
}
