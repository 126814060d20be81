/* SPDX-License-Identifier: MIT */
/* The model check (model.c): the client's subscriber link. What the server
 * pushed on it and the client has not read yet, the words the queue's
 * scripts publish, and the steps of the link: its connect, the server
 * running (or refusing) its SUBSCRIBE, the client reading what was pushed,
 * words the queue never published. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

/* ------------------------------------------- the subscriber link's socket */

push fifo[NPUSH];
int nfifo;
int sub_on;   /* the server has the client's SUBSCRIBE, on link sub_link */
int sub_link;
int sub_idx;  /* index in F.side.cmds of the last SUBSCRIBE the server ran, or -1 */
static char sub_channel[96];
int pub_refused; /* PUBLISH refused (an ACL): the scripts leave words out */

/* The link went (broken, or closed by the client): what it had unread and
 * the server's subscription go with it. */
void waker_sync(void)
{
    int up = F.side.connected;
    if (sub_on && (!up || F.side.connects != sub_link)) sub_on = 0;
    int k = 0;
    for (int i = 0; i < nfifo; i++) {
        if (up && fifo[i].link == F.side.connects)
            fifo[k++] = fifo[i];
        else if (fifo[i].kind == PUSH_WORD)
            model_reached.words_lost++;
    }
    nfifo = k;
}

void link_break(void)
{
    if (F.c && !F.detached && F.side.connected) fake_link_break(&F.side);
    waker_sync();
}

static void enqueue(int kind, const char *ch, const char *text, int forged)
{
    waker_sync();
    if (!F.side.connected) return;
    if (nfifo == NPUSH) { /* past the output buffer limit Redis cuts a subscriber */
        if (kind == PUSH_WORD) model_reached.words_lost++;
        link_break();
        return;
    }
    push *p = &fifo[nfifo++];
    p->kind = kind;
    p->link = F.side.connects;
    p->forged = forged;
    snprintf(p->ch, sizeof p->ch, "%s", ch);
    snprintf(p->text, sizeof p->text, "%s", text);
}

/* Strangers (another client's waiters) are told on channels of their own. */
static int stranger_channel(const char *ch) { return strncmp(ch, "stranger:", 9) == 0; }
int stranger_token(const char *t) { return strncmp(t, "00000000000000000000", 20) == 0; }

/* PUBLISH ch text from a script (redis.pcall: a refusal is no error). */
/* PUBLISH: 1 if a listener has the word (PUBLISH's count), else 0. */
int publish(const char *ch, const char *text)
{
    if (stranger_channel(ch)) return 1; /* another client's link, listening: not modelled */
    waker_sync();
    if (pub_refused || !sub_on || strcmp(ch, sub_channel) != 0) {
        model_reached.words_lost++; /* nobody listened, or it was not let out */
        return 0;
    }
    enqueue(PUSH_WORD, ch, text, 0);
    return 1;
}

/* ------------------------------------------ the subscriber link's steps */

int quieting;   /* the quiet phase: no faults, everything answered at once */
int told_g[NL]; /* the quiet phase: read a "g" the queue published, while waiting */

/* The oldest SUBSCRIBE on the link the server has not run, or -1. */
int sub_pending(void)
{
    if (!F.c || F.detached || !F.side.connected) return -1;
    for (int i = sub_idx + 1; i < F.side.ncmds; i++)
        if (F.side.cmds[i].subscribed && !F.side.cmds[i].answered) return i;
    return -1;
}

/* The server runs the client's SUBSCRIBE: from now on it has the words of
 * the channel; or (may_refuse) an ACL refuses it. */
void srv_subscribe(int may_refuse)
{
    waker_sync();
    int i = sub_pending();
    if (i < 0) return;
    sub_idx = i;
    if (may_refuse && R(6) == 0) {
        enqueue(PUSH_REFUSED, F.side.cmds[i].argv[1], "", 0);
        model_reached.subscribe_refused++;
        return;
    }
    sub_on = 1;
    sub_link = F.side.connects;
    snprintf(sub_channel, sizeof sub_channel, "%s", F.side.cmds[i].argv[1]);
    enqueue(PUSH_CONFIRM, sub_channel, "", 0);
}

static fake_cmd *open_sub(void)
{
    for (int i = 0; i < F.side.ncmds; i++)
        if (F.side.cmds[i].subscribed && !F.side.cmds[i].answered) return &F.side.cmds[i];
    return NULL;
}

/* The client reads a word. One for a token that waits for nothing (not a
 * model lease still acquiring) must find no waiter. */
static void read_word(const push *p)
{
    char tok[RDL_TOKEN_LEN + 1];
    int64_t ms;
    int kind = rdl_waker_parse_word(p->text, strlen(p->text), tok, &ms);
    const lease *l = kind ? by_token(tok) : NULL;
    int waits = l && !l->acq_done;
    if (quieting && waits && kind == RDL_WORD_GRANTED && !p->forged && F.connected) {
        told_g[l - L] = 1;
        model_reached.quiet_granted++;
    }
    uint64_t before = F.c->waker->words;
    fake_link_message(&F.side, p->ch, p->text);
    model_reached.words_delivered++;
    uint64_t found = F.c->waker->words - before;
    model_reached.words_found += (long)found;
    if (found && !waits) violation("the word \"%s\" found a waiter, its token waits for nothing", p->text);
}

/* The client reads up to k pushes: one at a time (mode 0), each as a read
 * of its own that the client drains after (1), or all in one read (2). */
void read_pushes(int k, int mode)
{
    waker_sync();
    if (!F.c || F.detached || !F.side.connected || !nfifo) return;
    rdl_conn *cn = F.side.cn;
    if (mode == 2) rdl_conn_read_begin(cn);
    for (; k > 0 && nfifo && F.side.connected; k--) {
        push p = fifo[0];
        memmove(&fifo[0], &fifo[1], (size_t)--nfifo * sizeof fifo[0]);
        if (p.kind == PUSH_CONFIRM) {
            fake_link_subscribed(&F.side);
        } else if (p.kind == PUSH_REFUSED) {
            static const char no[] = "NOPERM User has no permissions to access the channel";
            fake_cmd *s = open_sub();
            rdl_reply e = {.type = RDL_REPLY_ERROR, .str = no, .len = sizeof no - 1};
            if (s) rdl_conn_on_push(cn, s->req, &e);
        } else {
            read_word(&p);
        }
        if (mode == 1) {
            rdl_conn_on_read_done(cn); /* may end the client (the event hook) */
            if (F.detached) return;
        }
    }
    if (mode == 2) rdl_conn_read_end(cn);
}

/* The link's connect completes (its handshake answered at once): the
 * client sends its SUBSCRIBE. */
void link_connect(void)
{
    waker_sync();
    if (F.c && !F.detached && F.side.connecting) fake_link_connect(&F, &F.side);
}

/* Words the queue never published, in the socket as if it had: a token
 * never issued, a finished lease's, a stranger's, garbage, or a false
 * hint to a lease that waits (words are hints: it may only check). */
void forge_word(void)
{
    waker_sync();
    if (!sub_on) return;
    static const char never[] = "0bad0bad0bad0bad0bad0bad0bad0bad";
    const char *tok = never;
    int w = R(5);
    int i = R(NL);
    if (w == 1 && L[i].token[0] && L[i].acq_done) tok = L[i].token;
    if (w == 2 && strangers) {
        static char st[40];
        snprintf(st, sizeof st, "%032x", 1 + R(strangers));
        tok = st;
    }
    if (w == 3 && L[i].alive && !L[i].acq_done && L[i].token[0]) tok = L[i].token;
    char text[128];
    if (w == 4)
        snprintf(text, sizeof text, "%s", (const char *[]){"hello", "g 0bad", "c 0bad0bad0bad0bad0bad0bad0bad0bad x",
                                                          "g 0BAD0BAD0BAD0BAD0BAD0BAD0BAD0BAD"}[R(4)]);
    else if (R(2))
        snprintf(text, sizeof text, "g %s", tok);
    else
        snprintf(text, sizeof text, "c %s %d", tok, R(3000));
    enqueue(PUSH_WORD, sub_channel, text, 1);
    model_reached.forged_words++;
}
