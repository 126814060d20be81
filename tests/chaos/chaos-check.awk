# SPDX-License-Identifier: MIT
# chaos-check.awk: the checker of the chaos run (chaos.sh). Reads, in this
# order: faults.log, store.log, exits.log, then every worker log (their line
# formats are in chaos.sh, store.c and chaos-worker.c). Variables: ttl (ms),
# counter (the store's final counter), tmp (a scratch file), fences_partial
# (1 under a quorum, whose fences increase only as far as the raise of the
# counters reached the servers, docs/design.md section 10: fences-increase
# is then a figure), nslots (worker processes at a time), cs_ms (the
# longest sleep in a critical section), reconnect_ms (the workers'
# reconnect_max_ms), queue (1: the workers wait in the queue, and every
# live waiter must be served in time: the invariant live-waiters-served;
# else its numbers are figures), limit (0: the workers hold a mutex; N: a
# counting semaphore of N permits, each worker the weight its start line
# says), shared (1: shared and exclusive holders, limit the workers' count
# and an exclusive holder's weight all of it).
# Prints "figure: ..." lines and one "invariant: NAME ok|FAIL ..." line per
# invariant; exits 1 if any failed.

function basename(p) { sub(/.*\//, "", p); return p }
function kv(name,    i) {  # the value of NAME=VALUE among the fields
    for (i = 4; i <= NF; i++) if (index($i, name "=") == 1) return substr($i, length(name) + 2)
    return ""
}
function in_restart(a, b,    i) {  # does [a, b] touch a restart window?
    for (i = 1; i <= nrestart; i++) if (a <= rw_e[i] && b >= rw_s[i]) return 1
    return 0
}
function stopped(w, a, b,    i) {  # was worker w SIGSTOPped during [a, b]?
    for (i = 1; i <= nstop; i++) if (sw_w[i] == w && a <= sw_e[i] && b >= sw_s[i]) return 1
    return 0
}
# The fault a loss of worker w at t is put down to: the latest one under
# way within a TTL before t (one aimed at a worker, as a SIGSTOP, only for
# that worker), or "none".
function cause(w, t,    i, best) {
    best = 0
    for (i = 1; i <= nfaults; i++)
        if (flt_s[i] <= t && t <= flt_e[i] + ttl && (flt_w[i] == "" || flt_w[i] == w) && (!best || flt_s[i] > flt_s[best])) best = i
    return best ? flt_kind[best] : "none"
}
function verdict(name, ok, detail) {
    printf "invariant: %s %s%s\n", name, ok ? "ok" : "FAIL", detail != "" ? " (" detail ")" : ""
    if (!ok) failed = 1
}
# The last index i with key[i] < x in the sorted key[1..n] (0 if none).
function last_below(key, n, x,    lo, hi, mid) {
    lo = 0; hi = n
    while (lo < hi) { mid = int((lo + hi + 1) / 2); if (key[mid] < x) lo = mid; else hi = mid - 1 }
    return lo
}
# Fences are compared as the decimal integers they are, never as awk's
# doubles: a quorum's pass 2^53, where a double merges neighbours. a >= b
# for digit strings without leading zeros ("" counts as less than any).
function fence_ge(a, b) {
    a = a ""; b = b ""
    if (length(a) != length(b)) return length(a) > length(b)
    return a >= b
}
function max(a, b) { return a > b ? a : b }
function min(a, b) { return a < b ? a : b }
# The permits worker w holds (its start line's weight; 1 on a mutex).
function holder_weight(w) { return w in weight ? weight[w] : 1 }
# A wait of worker w ended at t (how: served, gave-up, end, killed, log-end).
function close_wait(w, t, how) {
    if (!(w in open_wait)) return
    nwait++; wt_w[nwait] = w; wt_b[nwait] = open_wait[w]; wt_e[nwait] = t; wt_how[nwait] = how
    waits_by[how]++
    delete open_wait[w]
}
# Worker w's log ended at t (its last line): a wait still open ended with
# the process, at its SIGKILL if the schedule killed it.
function log_ended(w, t) {
    if (w in killed_at) close_wait(w, killed_at[w], "killed")
    else close_wait(w, t, "log-end")
}
# One stretch [p, q] of worker w's wait k without a reset (below): no
# longer than nslots - 1 turns, and one more for each entry of a killed
# worker that may still have been ahead of w (killed less than an entry's
# life before p).
function piece(w, p, q, k,    i, dead, bound, len) {
    dead = 0
    for (i = 1; i <= nfaults; i++)
        if (flt_kind[i] == "waiter-kill" && flt_w[i] != w && flt_s[i] > p - life && flt_s[i] < q) dead++
    bound = (nslots - 1 + dead) * turn + 1.5 * ttl
    len = q - p
    npieces++
    if (len > longest) { longest = len; longest_bound = bound; longest_ex = sprintf("w%s from %.3f, %s", w, p, wt_how[k]) }
    if (npieces == 1 || len - bound > worst_margin) worst_margin = len - bound
    if (len > bound) {
        unserved++
        if (unserved <= 5) unserved_ex = unserved_ex sprintf(" w%s waited %.0f ms from %.3f (bound %.0f, %s)", w, len, p, bound, wt_how[k])
    }
}

{ file = basename(FILENAME) }

file == "faults.log" {
    if ($2 == "skipped") { skipped[$3] = 1; next }
    # Refused by Redis (or no answer): shown, not counted as injected.
    if ($2 ~ /^failed-/) { kinds[$2]++; next }
    kinds[$2]++; nfaults++
    flt_kind[nfaults] = $2; flt_s[nfaults] = $1; flt_e[nfaults] = $3; flt_w[nfaults] = kv("worker")
    # A waiter fault's target: waiting when picked, or not (the pick raced
    # a handoff, or nobody was waiting).
    if (kv("was") != "") { aimed++; if (kv("was") == "waiting") aimed_waiting++ }
    if ($2 == "waiter-kill") killed_at[kv("worker")] = $1
    # what a delay held arrives up to its ms after it ends
    if ($2 == "net-delay") flt_e[nfaults] = $3 + kv("ms")
    # A restart empties Redis: a holder confirmed before the kill may still
    # be locally valid up to a TTL later, so the window runs to up + TTL.
    if ($2 == "restart") { nrestart++; rw_s[nrestart] = $1; rw_e[nrestart] = $3 + ttl }
    if ($2 == "stop" || $2 == "waiter-stop") { nstop++; sw_w[nstop] = kv("worker"); sw_s[nstop] = $1; sw_e[nstop] = $3 }
    next
}

file == "store.log" {  # replay: "read|write ok|refused W FENCE VALUE"
    fence = $4 ""
    if (($2 == "ok") != fence_ge(fence, highest)) store_bad++
    if ($2 == "ok") highest = fence
    if ($1 == "write" && $2 == "ok") {
        if ($5 != replay + 1) lost_updates++
        replay = $5; store_accepted++
    } else if ($1 == "write") store_refused++
    else if ($2 == "refused") reads_refused++
    next
}

file == "exits.log" {  # "exit W STATUS STDERR_BYTES" (STATUS "killed": by the schedule)
    nworkers++
    if ($3 == "killed") killed++
    else if ($3 == "hung") hung++
    else if ($3 != 0) bad_exit++
    if ($4 != 0) noisy++
    exits = exits " w" $2 ":" $3
    next
}

# worker logs: "T W EVENT ..." (one process a file: W is unique to it)
FNR == 1 && file ~ /^worker/ { if (prev_w != "") log_ended(prev_w, prev_t) }
file ~ /^worker/ { prev_w = $2; prev_t = $1 }
$3 == "start" { start_t[$2] = $1; weight[$2] = limit > 0 && kv("weight") != "" ? kv("weight") + 0 : 1 }
# A wait: from "acquiring" to its acquisition, its give-up, the end of the
# run (SIGTERM) or the process's end (killed by the schedule).
$3 == "acquiring" { open_wait[$2] = $1; waited[$2] = 0 }
$3 == "waiting" { waited[$2] = 1 }
$3 == "acquired" { close_wait($2, $1, "served") }
$3 == "acquire-failed" { close_wait($2, $1, "gave-up"); gave_up[substr($0, index($0, "status=") + 7)]++ }
$3 == "signal" { close_wait($2, $1, "end") }
$3 == "acquired" {
    nacq++; acq_w[nacq] = $2; acq_f[nacq] = kv("fence"); acq_s[nacq] = kv("send")
    acq_c[nacq] = kv("confirm"); acq_waited[nacq] = waited[$2]
}
$3 == "act-begin" { begin[$2] = $1 }
$3 == "write" { last_write[$2] = $4; if ($4 == "accepted") worker_accepted++ }
$3 == "act-end" {
    nend++; end_t[nend] = $1
    niv++; iv_w[niv] = $2; iv_b[niv] = begin[$2]; iv_e[niv] = kv("last_held")
    if (last_write[$2] != "") {
        cs++
        if (kv("confirmed") == 0) unconfirmed[last_write[$2]]++
    }
    last_write[$2] = ""
}
$3 == "confirmed" { expiry[$2] = kv("expiry") }
$3 == "tick" {
    tick_t[$2, kv("due")] = $1; tick_i[$2, kv("due")] = kv("iter")
    if (kv("held") == 1) { held_past++; if (held_past <= 5) held_ex = held_ex sprintf(" w%s at %.3f", $2, $1) }
    if (kv("open") == 1) { nopen++; open_w[nopen] = $2; open_i[nopen] = kv("iter"); open_t[nopen] = $1 }
}
$3 == "lost-event" {
    r = kv("reason"); lost_by[r]++
    lost_in_iter[$2, kv("iter")] = 1
    if (r == 1 || r == 2) {
        nlost++; lost_w[nlost] = $2; lost_t[nlost] = $1; lost_i[nlost] = kv("iter")
        lost_e[nlost] = expiry[$2]
    }
}

END {
    if (prev_w != "") log_ended(prev_w, prev_t)
    sorter = "sort -n > " tmp
    # --- holder intervals: at no instant may the weights of the workers
    # holding add up past the capacity (a mutex: 1, each holder 1, so no
    # two at once). A sweep over the ends of the intervals; at one instant
    # first the ends of intervals begun earlier, then the beginnings, then
    # the ends of intervals of no length (a read refused at once). A
    # beginning past the capacity is an overlap; it lasts until the
    # weights are back within it or its own interval ends, and is excused
    # if that touches a restart window.
    cap = limit > 0 ? limit : 1
    sweep = "sort -k1,1n -k2,2n > " tmp
    for (i = 1; i <= niv; i++) {
        print iv_b[i], 1, iv_w[i], iv_e[i] | sweep
        print iv_e[i], (iv_e[i] + 0 > iv_b[i] + 0 ? 0 : 2), iv_w[i] | sweep
    }
    close(sweep)
    held = 0; npend = 0
    while ((getline line < tmp) > 0) {
        split(line, f, " "); t = f[1] + 0; w = f[3]
        if (held >= cap && nsweep) at_cap += t - sweep_t
        if (!nsweep++) sweep_from = t
        sweep_t = t
        if (f[2] == 1) {
            held += holder_weight(w)
            if (held > most) most = held
            if (held > cap) { npend++; pd_b[npend] = t; pd_e[npend] = f[4] + 0; pd_w[npend] = w; pd_h[npend] = held }
        } else held -= holder_weight(w)
        k = 0
        for (j = 1; j <= npend; j++) {
            if (held > cap && t < pd_e[j]) { k++; pd_b[k] = pd_b[j]; pd_e[k] = pd_e[j]; pd_w[k] = pd_w[j]; pd_h[k] = pd_h[j]; continue }
            if (in_restart(pd_b[j], t)) { restart_overlaps++; continue }
            overlaps++
            if (overlaps <= 5) overlap_ex = overlap_ex sprintf(" w%s at %.3f: weight %d of %d for %.1f ms", pd_w[j], pd_b[j], pd_h[j], cap, t - pd_b[j])
        }
        npend = k
    }
    close(tmp)

    # --- acquisitions in confirm order: fences, and who took it after a loss
    for (i = 1; i <= nacq; i++) print acq_c[i], acq_s[i], acq_f[i], acq_w[i] | sorter
    close(sorter)
    n = 0
    while ((getline line < tmp) > 0) {
        split(line, f, " "); n++
        c[n] = f[1] + 0; s[n] = f[2] + 0; fe[n] = f[3] ""; cw[n] = f[4]
        pmax[n] = n > 1 && !fence_ge(fe[n], pmax[n - 1]) ? pmax[n - 1] : fe[n]
    }
    close(tmp)
    # --- every live waiter served. In a FIFO queue a worker w that joins
    # has at most nslots - 1 others ahead of it (each worker has one
    # handle, and one that was served joins again at the tail), and each
    # of them has at most one turn before w: a worker leaves its place
    # when it is handed the lock, and whatever becomes of that (held and
    # released, held and lost, never confirmed), it can only join again
    # behind w. A turn, from one holder's confirmation to the next's:
    # - as meant: at most cs_ms of sleep, plus the store's I/O, the
    #   release and the handoff's round trips (half a TTL is ample);
    # - when the worker whose turn it is was frozen, killed or cut off
    #   (stop, waiter-stop, waiter-kill, waiter-net-*): a holder's lease
    #   runs out a TTL after its last renewal at most, a lock handed to a
    #   waiter that cannot confirm it after one claim, min(TTL, command
    #   timeout); the next waiter checks then (told to, or at the holder's
    #   TTL end);
    # - when the word of the handoff was lost (pubsub-kill: every wake-up
    #   link dropped until it subscribes again): the waiter handed the lock
    #   checks at the holder's TTL end at the latest, within its claim,
    #   so it keeps its place.
    # So a turn takes at most cs_ms + 1.5 TTL (turn), and a wait at most
    #     (nslots - 1) turn + 1.5 TTL        (w's own round trips, or a
    #                                         TTL if its own word is lost)
    # plus a turn for each entry of a killed worker still ahead of w (an
    # entry lives max(TTL, 1 s), life, after its last check; the new
    # process takes no place of it and joins behind w).
    # Faults of w's own (frozen, cut off: handed the lock then, it cannot
    # confirm within the claim and is dropped) and of everyone's (CLIENT
    # KILL of the command links, a restart, which empties the queue, DEBUG
    # SLEEP, CLIENT PAUSE, the proxy's faults on every connection,
    # failovers) can cost w its place: they reset the count, which starts
    # again once the fault is over and w can have joined again (recover):
    # reconnect_max_ms, then a connect and an attempt timing out (a TTL
    # each), and its next check (a TTL at most). w's own start (connect,
    # subscribe) counts as a reset too. Each stretch of a wait between
    # resets (a piece) must be no longer than its bound; a waiter stranded
    # (a word lost and no timer, a dead waiter the queue does not skip)
    # overstays it in its first stretch without a reset that is longer
    # than the bound, which the short queue run (run-chaos-queue.sh), with
    # mostly faults aimed at one worker, has many of.
    turn = cs_ms + 1.5 * ttl
    recover = reconnect_ms + 3 * ttl
    life = max(ttl, 1000)
    for (i = 1; i <= nfaults; i++) {
        if (flt_w[i] != "") flt_class[i] = "one"              # a reset for its worker only
        else if (flt_kind[i] == "pubsub-kill") flt_class[i] = "none"
        else flt_class[i] = "all"
    }
    for (k = 1; k <= nwait; k++) {
        w = wt_w[k]; b = wt_b[k]; e = wt_e[k]
        # the windows [start, end + recover] of the resets that touch the wait
        nr = 0
        if ((w in start_t) && start_t[w] + recover > b) { nr++; rs[nr] = start_t[w]; re[nr] = start_t[w] + recover }
        for (i = 1; i <= nfaults; i++) {
            if (flt_class[i] == "none" || (flt_class[i] == "one" && flt_w[i] != w)) continue
            if (flt_s[i] < e && flt_e[i] + recover > b) { nr++; rs[nr] = flt_s[i]; re[nr] = flt_e[i] + recover }
        }
        for (i = 2; i <= nr; i++) { # by start (a handful)
            x = rs[i]; y = re[i]
            for (j = i - 1; j >= 1 && rs[j] > x; j--) { rs[j + 1] = rs[j]; re[j + 1] = re[j] }
            rs[j + 1] = x; re[j + 1] = y
        }
        cur = b
        for (i = 1; i <= nr && cur < e; i++) {
            if (rs[i] > cur) piece(w, cur, min(rs[i], e), k)
            if (re[i] > cur) cur = re[i]
        }
        if (cur < e) piece(w, cur, e, k)
        # figures: the longest wait, and the turns others took meanwhile
        if (e - b > longest_wait) longest_wait = e - b
        t = last_below(c, n, e) - last_below(c, n, b) - (wt_how[k] == "served")
        if (t > most_turns) { most_turns = t; most_turns_ex = sprintf("w%s from %.3f", w, b) }
    }

    # --- turns after a wait: how long from the previous holder's act-end
    # to the confirmation of a worker that was told busy in its cycle (a
    # handoff in queue mode: a round trip or two; a poller's next retry;
    # a lease that ran out)
    for (i = 1; i <= nend; i++) print end_t[i] | sorter
    close(sorter)
    ne = 0
    while ((getline line < tmp) > 0) { ne++; ends[ne] = line + 0 }
    close(tmp)
    ngap = 0
    for (i = 1; i <= nacq; i++) {
        if (!acq_waited[i]) continue
        j = last_below(ends, ne, acq_c[i] + 0)
        if (j > 0) print acq_c[i] - ends[j] | sorter
    }
    close(sorter)
    while ((getline line < tmp) > 0) { ngap++; gap[ngap] = line + 0 }
    close(tmp)
    system("rm -f " tmp)
    # A request sent after another acquire was confirmed reached Redis after
    # it: its fence must be higher. The send time is whole-ms rtt: 1 ms slack.
    for (i = 1; i <= n; i++) {
        j = last_below(c, n, s[i] - 1)
        if (j > 0 && j < i && fence_ge(pmax[j], fe[i])) fence_bad++
    }
    # Acquisitions at once (a semaphore's holders) are not ordered by that,
    # but each mints a fence of its own: none may share one.
    for (i = 1; i <= nacq; i++) {
        if (acq_f[i] in fence_seen) fence_dup++
        fence_seen[acq_f[i]] = 1
    }
    # Every loss must be reported before the key could expire on the server,
    # at E (the worker's "confirmed expiry=E", from the send time). The
    # worker's own timer for E ("tick") is due no earlier than the library's
    # deadline: a report in a later loop iteration than the tick is a late
    # library; a report after E in the tick's iteration (or before) came as
    # soon as the process ran (SIGSTOP, or a loaded machine), counted apart.
    for (k = 1; k <= nlost; k++) {
        e = lost_e[k]; w = lost_w[k]
        lost_cause[cause(w, lost_t[k])]++
        if (e == "") { lost_unconfirmed++; continue } # no confirmation before: impossible
        if (lost_t[k] <= e + 0) { lost_before++; continue }
        late = lost_t[k] - e
        if ((w, e) in tick_i && tick_i[w, e] + 0 >= lost_i[k] + 0) {
            if (stopped(w, e, lost_t[k])) lost_frozen++
            else { lost_slow++; if (late > max_late) max_late = late }
            continue
        }
        lost_late++
        if (lost_late <= 5) late_ex = late_ex sprintf(" w%s at %.3f, %.1f ms after %.3f", w, lost_t[k], late, e)
    }

    # A tick found the lease still ours and not yet reported lost: the
    # library's timer, due no later, must report it in that same iteration.
    for (k = 1; k <= nopen; k++)
        if (!((open_w[k], open_i[k]) in lost_in_iter)) {
            silent++
            if (silent <= 5) silent_ex = silent_ex sprintf(" w%s at %.3f", open_w[k], open_t[k])
        }

    printf "figure: faults injected %d:", nfaults
    for (k in kinds) printf " %s=%d", k, kinds[k]
    for (k in skipped) printf " %s=skipped", k
    printf "\n"
    printf "figure: workers %d, acquisitions %d, critical sections %d (writes accepted %d, refused %d; reads refused %d)\n", nworkers, nacq, cs, store_accepted, store_refused, reads_refused
    printf "figure: writes after the lease was lost (held() 0 after the write): refused %d, accepted %d (before the next holder read)\n", unconfirmed["refused"], unconfirmed["accepted"]
    printf "figure: losses (expired or not ours) by the fault under way:"
    for (k in lost_cause) printf " %s=%d", k, lost_cause[k]
    printf "\n"
    printf "figure: losses expired=%d not-owner=%d closed=%d; reported before the key could expire on the server %d; later, in the first loop iteration the process ran: frozen by SIGSTOP %d, machine busy %d (max %.1f ms late); later while the loop ran %d\n", lost_by[1], lost_by[2], lost_by[4], lost_before, lost_frozen, lost_slow, max_late, lost_late
    printf "figure: %s %d outside restart windows, %d touching %d restart windows\n", (limit > 0 ? "holders past the limit" : "overlaps"), overlaps + 0, restart_overlaps + 0, nrestart
    printf "figure: the most weight held at once %d of %d; at the capacity %.0f ms of %.0f (%.0f%%)\n", most, cap, at_cap, sweep_t - sweep_from, (sweep_t > sweep_from ? 100 * at_cap / (sweep_t - sweep_from) : 0)
    printf "figure: counter %d, accepted writes %d (store log) %d (workers)\n", counter, store_accepted, worker_accepted
    printf "figure: exits%s\n", exits
    printf "figure: waiter faults %d, the target waiting when picked in %d; processes killed by the schedule %d\n", aimed, aimed_waiting, killed
    printf "figure: waits %d: served %d, gave up %d", nwait, waits_by["served"], waits_by["gave-up"]
    for (k in gave_up) printf " (%d: %s)", gave_up[k], k
    printf ", ended by the run's end %d, by a kill %d; longest %.0f ms; most turns others took during one wait %d (%s)\n", waits_by["end"], waits_by["killed"] + waits_by["log-end"], longest_wait, most_turns, most_turns_ex
    if (ngap) printf "figure: turns after a wait %d: previous holder's act-end to the confirmation median %.1f ms, 90%% %.1f ms, max %.1f ms\n", ngap, gap[int((ngap + 1) / 2)], gap[int((ngap * 9 + 9) / 10)], gap[ngap]
    printf "figure: waits checked in %d stretches between resets (a fault of the waiter's own or everyone's); longest %.0f ms (bound %.0f: %s); closest to its bound %.0f ms %s\n", npieces, longest, longest_bound, longest_ex, worst_margin < 0 ? -worst_margin : worst_margin, worst_margin < 0 ? "under" : "over"

    verdict("critical-sections-ran", cs > 0 && store_accepted > 0, cs " critical sections")
    if (shared) verdict("exclusive-alone-outside-restarts", overlaps == 0, overlaps + 0 " times an exclusive holder was not alone (capacity " limit ")" overlap_ex)
    else if (limit > 0) verdict("within-limit-outside-restarts", overlaps == 0, overlaps + 0 " times past the limit of " limit overlap_ex)
    else verdict("no-overlap-outside-restarts", overlaps == 0, overlaps + 0 " overlaps" overlap_ex)
    verdict("no-lost-update", counter == store_accepted && store_accepted == worker_accepted && lost_updates == 0, "counter " counter ", accepted " store_accepted "/" worker_accepted ", lost " lost_updates + 0)
    verdict("stale-writes-refused", store_bad == 0, store_bad + 0 " store operations against the fence rule")
    if (fences_partial) printf "figure: acquisitions with a fence not above an earlier one %d, with a fence another had %d (a quorum's increase only as far as its raise reached the servers)\n", fence_bad, fence_dup
    else verdict("fences-increase", fence_bad + fence_dup == 0, fence_bad + 0 " acquisitions with a fence not above an earlier one, " fence_dup + 0 " with a fence another had")
    verdict("loss-reported-before-key-expiry", lost_late + lost_unconfirmed + silent == 0, lost_late + 0 " reported late while the loop ran" late_ex ", " silent + 0 " never reported" silent_ex ", " lost_unconfirmed + 0 " never confirmed")
    verdict("not-held-past-expiry", held_past == 0, held_past + 0 " times held() said 1 at the earliest server expiry" held_ex)
    verdict("workers-exit-clean", nworkers > 0 && bad_exit + hung + noisy == 0, "bad exit " bad_exit + 0 ", hung " hung + 0 ", stderr " noisy + 0)
    # No stretch at all (resets covering every wait) checked nothing: a
    # failure too, of the schedule.
    if (queue) verdict("live-waiters-served", npieces > 0 && unserved == 0, npieces ? unserved + 0 " of " npieces " stretches of waiting past their bound" unserved_ex : "no stretch of waiting between resets to check")
    else printf "figure: stretches of waiting past the queue's bound %d (not an invariant: the workers poll)\n", unserved
    exit failed
}
