/* SPDX-License-Identifier: MIT */
/* Hash slots as Redis computes them (cluster.c's keyHashSlot and crc16.c):
 * the same answer for every key is what routes a command to the node that
 * has it, so this follows Redis's definition to the byte. */
#include <string.h>

#include "slot.h"

/* CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, no reflection,
 * computed bit by bit: a few ns per key byte, and no table to get wrong. */
uint16_t rdl_crc16(const char *buf, size_t len)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((unsigned char)buf[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

unsigned rdl_key_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t from = (size_t)(open - key) + 1;
        const char *close = memchr(key + from, '}', len - from);
        /* an empty tag ("{}") or none closed: the whole key counts */
        if (close && close > key + from) return rdl_crc16(key + from, (size_t)(close - key) - from) & (RDL_SLOTS - 1);
    }
    return rdl_crc16(key, len) & (RDL_SLOTS - 1);
}
