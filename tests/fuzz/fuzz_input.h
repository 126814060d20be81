/* SPDX-License-Identifier: MIT */
/* Reading a fuzz input as a stream of choices: every take_*() returns 0
 * once the input is used up, so any input (the empty one too) is a valid
 * program and the fuzzer never wastes runs on rejected inputs. */
#ifndef REDLEASE_FUZZ_INPUT_H
#define REDLEASE_FUZZ_INPUT_H
#include <stddef.h>
#include <stdint.h>

typedef struct fuzz_input {
    const uint8_t *p;
    size_t n;
} fuzz_input;

static inline int fuzz_left(const fuzz_input *in) { return in->n > 0; }

static inline uint8_t take_u8(fuzz_input *in)
{
    if (!in->n) return 0;
    in->n--;
    return *in->p++;
}

static inline uint16_t take_u16(fuzz_input *in)
{
    uint16_t hi = take_u8(in);
    return (uint16_t)(hi << 8 | take_u8(in));
}

static inline uint64_t take_u64(fuzz_input *in)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | take_u8(in);
    return v;
}

/* Up to max bytes (fewer if the input ends); *len gets how many. */
static inline const uint8_t *take_bytes(fuzz_input *in, size_t max, size_t *len)
{
    const uint8_t *p = in->p;
    *len = max < in->n ? max : in->n;
    in->p += *len;
    in->n -= *len;
    return p;
}

#endif
