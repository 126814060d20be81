# SPDX-License-Identifier: MIT
# chaos-check.awk: the checker of the chaos run (chaos.sh). Reads, in this
# order: faults.log, store.log, exits.log, then every worker log (their line
# formats are in chaos.sh, store.c and chaos-worker.c). Variables: ttl (ms),
# counter (the store's final counter), tmp (a scratch file), fences_partial
# (1 under a quorum, whose fences increase only as far as the raise of the
# counters reached the servers, docs/design.md section 10: fences-increase
# is then a figure).
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
# way within a TTL before t (a SIGSTOP only for the worker it froze), or
# "none".
function cause(w, t,    i, best) {
    best = 0
    for (i = 1; i <= nfaults; i++)
        if (flt_s[i] <= t && t <= flt_e[i] + ttl && (flt_kind[i] != "stop" || flt_w[i] == w) && (!best || flt_s[i] > flt_s[best])) best = i
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

{ file = basename(FILENAME) }

file == "faults.log" {
    if ($2 == "skipped") { skipped[$3] = 1; next }
    # Refused by Redis (or no answer): shown, not counted as injected.
    if ($2 ~ /^failed-/) { kinds[$2]++; next }
    kinds[$2]++; nfaults++
    flt_kind[nfaults] = $2; flt_s[nfaults] = $1; flt_e[nfaults] = $3; flt_w[nfaults] = kv("worker")
    # what a delay held arrives up to its ms after it ends
    if ($2 == "net-delay") flt_e[nfaults] = $3 + kv("ms")
    # A restart empties Redis: a holder confirmed before the kill may still
    # be locally valid up to a TTL later, so the window runs to up + TTL.
    if ($2 == "restart") { nrestart++; rw_s[nrestart] = $1; rw_e[nrestart] = $3 + ttl }
    if ($2 == "stop") { nstop++; sw_w[nstop] = kv("worker"); sw_s[nstop] = $1; sw_e[nstop] = $3 }
    next
}

file == "store.log" {  # replay: "read|write ok|refused W FENCE VALUE"
    fence = $4 + 0
    if (($2 == "ok") != (fence >= highest)) store_bad++
    if ($2 == "ok") highest = fence
    if ($1 == "write" && $2 == "ok") {
        if ($5 != replay + 1) lost_updates++
        replay = $5; store_accepted++
    } else if ($1 == "write") store_refused++
    else if ($2 == "refused") reads_refused++
    next
}

file == "exits.log" {  # "exit W STATUS STDERR_BYTES"
    nworkers++
    if ($3 == "hung") hung++
    else if ($3 != 0) bad_exit++
    if ($4 != 0) noisy++
    exits = exits " w" $2 ":" $3
    next
}

# worker logs: "T W EVENT ..."
$3 == "acquired" {
    nacq++; acq_w[nacq] = $2; acq_f[nacq] = kv("fence"); acq_s[nacq] = kv("send")
    acq_c[nacq] = kv("confirm")
}
$3 == "act-begin" { begin[$2] = $1 }
$3 == "write" { last_write[$2] = $4; if ($4 == "accepted") worker_accepted++ }
$3 == "act-end" {
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
    sorter = "sort -n > " tmp
    # --- holder intervals: none of two workers may overlap
    for (i = 1; i <= niv; i++) print iv_b[i], iv_e[i], iv_w[i] | sorter
    close(sorter)
    n = 0
    while ((getline line < tmp) > 0) {
        split(line, f, " "); b = f[1] + 0; e = f[2] + 0; w = f[3]
        for (o in lastend) {
            if (o == w || lastend[o] <= b) continue
            oe = lastend[o] < e ? lastend[o] : e
            if (in_restart(b, oe)) restart_overlaps++
            else { overlaps++; if (overlaps <= 5) overlap_ex = overlap_ex sprintf(" w%s[%.3f..%.3f]/w%s..%.3f", w, b, e, o, lastend[o]) }
        }
        if (!(w in lastend) || e > lastend[w]) lastend[w] = e
    }
    close(tmp)

    # --- acquisitions in confirm order: fences, and who took it after a loss
    for (i = 1; i <= nacq; i++) print acq_c[i], acq_s[i], acq_f[i], acq_w[i] | sorter
    close(sorter)
    n = 0
    while ((getline line < tmp) > 0) {
        split(line, f, " "); n++
        c[n] = f[1] + 0; s[n] = f[2] + 0; fe[n] = f[3] + 0; cw[n] = f[4]
        pmax[n] = n > 1 && pmax[n - 1] > fe[n] ? pmax[n - 1] : fe[n]
    }
    close(tmp)
    system("rm -f " tmp)
    # A request sent after another acquire was confirmed reached Redis after
    # it: its fence must be higher. The send time is whole-ms rtt: 1 ms slack.
    for (i = 1; i <= n; i++) {
        j = last_below(c, n, s[i] - 1)
        if (j > 0 && j < i && pmax[j] >= fe[i]) fence_bad++
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
    printf "figure: overlaps %d outside restart windows, %d touching %d restart windows\n", overlaps + 0, restart_overlaps + 0, nrestart
    printf "figure: counter %d, accepted writes %d (store log) %d (workers)\n", counter, store_accepted, worker_accepted
    printf "figure: exits%s\n", exits

    verdict("critical-sections-ran", cs > 0 && store_accepted > 0, cs " critical sections")
    verdict("no-overlap-outside-restarts", overlaps == 0, overlaps + 0 " overlaps" overlap_ex)
    verdict("no-lost-update", counter == store_accepted && store_accepted == worker_accepted && lost_updates == 0, "counter " counter ", accepted " store_accepted "/" worker_accepted ", lost " lost_updates + 0)
    verdict("stale-writes-refused", store_bad == 0, store_bad + 0 " store operations against the fence rule")
    if (fences_partial) printf "figure: acquisitions with a fence not above an earlier one %d (a quorum's increase only as far as its raise reached the servers)\n", fence_bad
    else verdict("fences-increase", fence_bad == 0, fence_bad + 0 " acquisitions with a fence not above an earlier one")
    verdict("loss-reported-before-key-expiry", lost_late + lost_unconfirmed + silent == 0, lost_late + 0 " reported late while the loop ran" late_ex ", " silent + 0 " never reported" silent_ex ", " lost_unconfirmed + 0 " never confirmed")
    verdict("not-held-past-expiry", held_past == 0, held_past + 0 " times held() said 1 at the earliest server expiry" held_ex)
    verdict("workers-exit-clean", nworkers > 0 && bad_exit + hung + noisy == 0, "bad exit " bad_exit + 0 ", hung " hung + 0 ", stderr " noisy + 0)
    exit failed
}
