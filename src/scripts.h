/* The Lua scripts a lease needs. Each is sent by EVALSHA with the SHA1 the
 * server returned for SCRIPT LOAD on this connection, and by EVAL when the
 * server answers NOSCRIPT (script cache flushed) or the load failed. */
#ifndef REDLEASE_SCRIPTS_H
#define REDLEASE_SCRIPTS_H

enum rdl_script {
    RDL_SCRIPT_ACQUIRE_FENCED, /* KEYS: key, fence key; ARGV: token, ttl -> fence or 0 */
    RDL_SCRIPT_RENEW,          /* KEYS: key; ARGV: token, ttl -> 1 extended, 0 not ours */
    RDL_SCRIPT_RELEASE,        /* KEYS: key; ARGV: token -> 1 deleted, 0 not ours */
    RDL_SCRIPT_COUNT
};

extern const char *const rdl_script_src[RDL_SCRIPT_COUNT];

#endif
