/* SPDX-License-Identifier: MIT */
/* Status texts and the version string. */
#include "redlease.h"

const char *redlease_version(void) { return REDLEASE_VERSION; }

const char *redlease_strerror(int status)
{
    switch (status) {
    case REDLEASE_OK: return "success";
    case REDLEASE_EINVAL: return "invalid argument";
    case REDLEASE_ENOMEM: return "out of memory";
    case REDLEASE_EBUSY: return "lock held by another lease";
    case REDLEASE_ETIMEDOUT: return "Redis did not answer in time";
    case REDLEASE_ECANCELED: return "canceled";
    case REDLEASE_ECONN: return "no connection to Redis";
    case REDLEASE_EREDIS: return "Redis returned an error";
    case REDLEASE_EPROTO: return "unexpected reply from Redis";
    case REDLEASE_ENOTHELD: return "lease no longer held";
    case REDLEASE_ESYS: return "system error";
    case REDLEASE_EAUTH: return "Redis refused the credentials";
    case REDLEASE_EPERM: return "not permitted by the Redis ACL";
    case REDLEASE_ECONFIG: return "Redis refused a client setting";
    case REDLEASE_ENOTSUP: return "not supported by this build of redlease";
    case REDLEASE_ETLS: return "TLS failed";
    case REDLEASE_EREPLICAS: return "too few replicas acknowledged the write in time";
    case REDLEASE_EQUORUM: return "too few of the quorum's servers said yes";
    case REDLEASE_EKIND: return "the resource is of another kind than this lease";
    }
    return "unknown status";
}

const char *redlease_lost_reason_str(int reason)
{
    switch (reason) {
    case REDLEASE_LOST_EXPIRED: return "lease expired before a renewal was confirmed";
    case REDLEASE_LOST_NOT_OWNER: return "key gone or held by another token";
    case REDLEASE_LOST_MAX_HOLD: return "maximum hold time reached";
    case REDLEASE_LOST_CLOSED: return "client closed";
    }
    return "unknown reason";
}
