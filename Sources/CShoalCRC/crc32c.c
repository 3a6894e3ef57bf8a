// CShoalCRC: CRC-32C (Castagnoli) with the SSE 4.2 CRC32 instruction, eight bytes per step in
// three chains at once.
// Everywhere else ShoalWire's portable table-driven code runs instead.
#include "shoal_crc32c.h"
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>

// One CRC32 instruction has a latency of three cycles and a throughput of one per cycle, so a
// single chain of them runs at a third of the instruction's speed. Long inputs go as three
// chains over three consecutive blocks at once; the blocks' registers are then joined: the
// register after block A then B is the register after A moved past |B| zero bytes (multiplied by
// x^(8|B|) modulo the polynomial) plus B's register from zero. That is how Intel's and zlib's
// fast CRC code do it.

/// The reflected CRC-32C polynomial.
#define SHOAL_CRC32C_POLY 0x82F63B78u
/// Block sizes (bytes, multiples of 8) of the three-chain loops: rounds of 24 KiB, then of 768 B.
#define SHOAL_CRC32C_LONG 8192
#define SHOAL_CRC32C_SHORT 256

/// x^(8·LONG) and x^(8·SHORT) modulo the polynomial (reflected), set once by
/// shoal_crc32c_hw_available() before shoal_crc32c_hw may be called.
static uint32_t shoal_crc32c_long_shift, shoal_crc32c_short_shift;

/// (a · b) modulo the polynomial, reflected (0x80000000 is 1). From zlib's multmodp.
static uint32_t shoal_crc32c_multiply(uint32_t a, uint32_t b) {
    uint32_t m = (uint32_t)1 << 31, p = 0;
    if (a == 0) return 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0) break;
        }
        m >>= 1;
        b = (b & 1) ? (b >> 1) ^ SHOAL_CRC32C_POLY : b >> 1;
    }
    return p;
}

/// x^(8·n) modulo the polynomial: 1 moved past n zero bytes by the instruction (n a multiple of 8).
__attribute__((target("sse4.2")))
static uint32_t shoal_crc32c_zeros(size_t n) {
    uint64_t c = 0x80000000u;
    for (size_t i = 0; i < n / 8; i++) c = _mm_crc32_u64(c, 0);
    return (uint32_t)c;
}

int shoal_crc32c_hw_available(void) {
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        int available = __builtin_cpu_supports("sse4.2") ? 1 : 0;
        if (available) {
            shoal_crc32c_long_shift = shoal_crc32c_zeros(SHOAL_CRC32C_LONG);
            shoal_crc32c_short_shift = shoal_crc32c_zeros(SHOAL_CRC32C_SHORT);
        }
        cached = available;
    }
    return cached;
}

/// Three chains over three consecutive blocks of `block` bytes while at least three remain.
__attribute__((target("sse4.2")))
static inline uint64_t shoal_crc32c_three(uint64_t c0, const unsigned char **pp, size_t *np, size_t block, uint32_t shift) {
    const unsigned char *p = *pp;
    size_t n = *np;
    while (n >= 3 * block) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *end = p + block;
        do {
            uint64_t w0, w1, w2;
            memcpy(&w0, p, 8);  // unaligned loads
            memcpy(&w1, p + block, 8);
            memcpy(&w2, p + 2 * block, 8);
            c0 = _mm_crc32_u64(c0, w0);
            c1 = _mm_crc32_u64(c1, w1);
            c2 = _mm_crc32_u64(c2, w2);
            p += 8;
        } while (p < end);
        c0 = shoal_crc32c_multiply(shift, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = shoal_crc32c_multiply(shift, (uint32_t)c0) ^ (uint32_t)c2;
        p += 2 * block;
        n -= 3 * block;
    }
    *pp = p;
    *np = n;
    return c0;
}

__attribute__((target("sse4.2")))
uint32_t shoal_crc32c_hw(uint32_t crc, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    uint64_t c = crc;
    c = shoal_crc32c_three(c, &p, &n, SHOAL_CRC32C_LONG, shoal_crc32c_long_shift);
    c = shoal_crc32c_three(c, &p, &n, SHOAL_CRC32C_SHORT, shoal_crc32c_short_shift);
    while (n >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);  // unaligned load
        c = _mm_crc32_u64(c, word);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n > 0) {
        c32 = _mm_crc32_u8(c32, *p);
        p += 1;
        n -= 1;
    }
    return c32;
}

#else

int shoal_crc32c_hw_available(void) { return 0; }

uint32_t shoal_crc32c_hw(uint32_t crc, const void *data, size_t n) {
    (void)data;
    (void)n;
    return crc;  // never called: shoal_crc32c_hw_available() is 0
}

#endif
