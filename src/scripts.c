#include "scripts.h"

const char *const rdl_script_src[RDL_SCRIPT_COUNT] = {
    /* Acquire with a fencing token. The counter lives beside the key and has
     * no TTL. If it is missing (first use, or a restart without persistence
     * lost it), it starts from the server clock in microseconds, so a fence
     * never goes backwards across such a restart. The counter is minted
     * before the lock key is written: a script error (a foreign value at the
     * counter: WRONGTYPE) must not leave a lock key nobody was told about,
     * since Redis does not undo a script's writes. */
    [RDL_SCRIPT_ACQUIRE_FENCED] =
        "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end\n"
        "if redis.call('EXISTS', KEYS[2]) == 0 then\n"
        "  local t = redis.call('TIME')\n"
        "  redis.call('SET', KEYS[2], t[1] .. string.format('%06d', tonumber(t[2])))\n"
        "end\n"
        "local fence = redis.call('INCR', KEYS[2])\n"
        "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
        "return fence\n",
    /* Strict compare-and-pexpire: never re-creates a missing key. */
    [RDL_SCRIPT_RENEW] =
        "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
        "  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
        "end\n"
        "return 0\n",
    /* Compare-and-delete: a holder can never delete someone else's lock. */
    [RDL_SCRIPT_RELEASE] =
        "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
        "  return redis.call('DEL', KEYS[1])\n"
        "end\n"
        "return 0\n",
};
