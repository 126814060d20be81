/* SPDX-License-Identifier: MIT */
/* The outage rule of cli/outage.h. */
#include "outage.h"

#include <stdio.h>
#include <string.h>

void cli_outage_init(cli_outage *o, int64_t max_ms)
{
    memset(o, 0, sizeof *o);
    o->max_ms = max_ms;
    o->since = -1;
}

int cli_outage_failed(cli_outage *o, int64_t now, int attempt, const char *text)
{
    if (attempt)
        o->attempts++;
    else
        o->links++;
    snprintf(o->last, sizeof o->last, "%s", text ? text : "");
    o->failing = 1;
    if (o->since < 0) o->since = now;
    return now - o->since >= o->max_ms;
}

void cli_outage_reached(cli_outage *o) { o->failing = 0; }

int cli_outage_over(cli_outage *o)
{
    int was = o->since >= 0;
    o->since = -1;
    o->failing = 0;
    return was;
}

int64_t cli_outage_deadline(const cli_outage *o) { return o->since < 0 ? -1 : o->since + o->max_ms; }

int cli_outage_expired(const cli_outage *o, int64_t now)
{
    return o->since >= 0 && o->failing && now - o->since >= o->max_ms;
}

size_t cli_outage_tried(const cli_outage *o, char *buf, size_t size)
{
    char a[48] = "", l[64] = "";
    if (o->attempts) snprintf(a, sizeof a, "%d attempt%s failed", o->attempts, o->attempts == 1 ? "" : "s");
    if (o->links)
        snprintf(l, sizeof l, "%d connection%s lost or refused", o->links, o->links == 1 ? "" : "s");
    int n = snprintf(buf, size, "%s%s%s", a, a[0] && l[0] ? ", " : "", l);
    return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}
