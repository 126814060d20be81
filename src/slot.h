/* SPDX-License-Identifier: MIT */
/* Redis Cluster's hash slot of a key (src/slot.c): CRC16 (XMODEM) of the
 * key, or of its hash tag (the text between the first "{" and the first
 * "}" after it, when not empty), modulo 16384. The Cluster router sends a
 * lock's commands to the primary that serves its key's slot; every key of
 * one resource has the same tag (src/keys.c), so one slot. */
#ifndef REDLEASE_SLOT_H
#define REDLEASE_SLOT_H

#include <stddef.h>
#include <stdint.h>

#define RDL_SLOTS 16384

uint16_t rdl_crc16(const char *buf, size_t len);
/* 0 .. RDL_SLOTS - 1 */
unsigned rdl_key_slot(const char *key, size_t len);

#endif
