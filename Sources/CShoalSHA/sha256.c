// CShoalSHA: SHA-256 compression with the SHA extensions (SHA256RNDS2, SHA256MSG1/2).
// Elsewhere shoal_sha256_hw_available() says 0 and swift-crypto does the hashing.
#include "shoal_sha256.h"

#if defined(__x86_64__)
#include <immintrin.h>

/// The round constants (FIPS 180-4 §4.2.2), four per round group.
static const uint32_t shoal_sha256_k[64] __attribute__((aligned(16))) = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define SHOAL_SHA_TARGET __attribute__((target("sha,sse4.1,ssse3")))
#define SHOAL_SHA_INLINE SHOAL_SHA_TARGET __attribute__((always_inline)) static inline

/// The instructions keep the state as two registers, ABEF and CDGH (high word first).
SHOAL_SHA_INLINE void shoal_sha256_load(const uint32_t s[8], __m128i *abef, __m128i *cdgh) {
    __m128i dcba = _mm_loadu_si128((const __m128i *)&s[0]);
    __m128i hgfe = _mm_loadu_si128((const __m128i *)&s[4]);
    __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    *abef = _mm_alignr_epi8(cdab, efgh, 8);
    *cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
}

SHOAL_SHA_INLINE void shoal_sha256_store(uint32_t s[8], __m128i abef, __m128i cdgh) {
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)&s[0], _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)&s[4], _mm_alignr_epi8(dchg, feba, 8));
}

/// Message words 4g…4g+3 of the block at `p`, into w[g % 4]: the first four groups are the
/// block's words (big-endian), each later one is σ1/σ0 of earlier groups (FIPS 180-4 §6.2.2):
/// W[t] = σ1(W[t-2]) + W[t-7] + σ0(W[t-15]) + W[t-16].
SHOAL_SHA_INLINE __m128i shoal_sha256_schedule(__m128i w[4], const uint8_t *p, int g) {
    const __m128i big_endian = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    if (g < 4) {
        w[g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), big_endian);
    } else {
        __m128i x = _mm_sha256msg1_epu32(w[g & 3], w[(g + 1) & 3]);
        x = _mm_add_epi32(x, _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 4));
        w[g & 3] = _mm_sha256msg2_epu32(x, w[(g + 3) & 3]);
    }
    return _mm_add_epi32(w[g & 3], _mm_load_si128((const __m128i *)&shoal_sha256_k[4 * g]));
}

SHOAL_SHA_TARGET void shoal_sha256_hw_blocks(uint32_t state[8], const void *p, size_t blocks) {
    const uint8_t *b = p;
    __m128i abef, cdgh;
    shoal_sha256_load(state, &abef, &cdgh);
    for (; blocks > 0; blocks--, b += 64) {
        __m128i abef0 = abef, cdgh0 = cdgh, w[4];
#pragma clang loop unroll(full)
        for (int g = 0; g < 16; g++) {
            __m128i m = shoal_sha256_schedule(w, b, g);
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, m);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(m, 0x0E));
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
    }
    shoal_sha256_store(state, abef, cdgh);
}

SHOAL_SHA_TARGET void shoal_sha256_hw_blocks2(uint32_t a[8], const void *p, uint32_t b[8], const void *q, size_t blocks) {
    const uint8_t *x = p, *y = q;
    __m128i abef, cdgh, abef2, cdgh2;
    shoal_sha256_load(a, &abef, &cdgh);
    shoal_sha256_load(b, &abef2, &cdgh2);
    for (; blocks > 0; blocks--, x += 64, y += 64) {
        __m128i abef0 = abef, cdgh0 = cdgh, abef20 = abef2, cdgh20 = cdgh2, w[4], v[4];
        // The two streams' rounds alternate, so each fills the other's wait on the instruction.
#pragma clang loop unroll(full)
        for (int g = 0; g < 16; g++) {
            __m128i m = shoal_sha256_schedule(w, x, g);
            __m128i n = shoal_sha256_schedule(v, y, g);
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, m);
            cdgh2 = _mm_sha256rnds2_epu32(cdgh2, abef2, n);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(m, 0x0E));
            abef2 = _mm_sha256rnds2_epu32(abef2, cdgh2, _mm_shuffle_epi32(n, 0x0E));
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
        abef2 = _mm_add_epi32(abef2, abef20);
        cdgh2 = _mm_add_epi32(cdgh2, cdgh20);
    }
    shoal_sha256_store(a, abef, cdgh);
    shoal_sha256_store(b, abef2, cdgh2);
}

int shoal_sha256_hw_available(void) {
    // Asked once per process (SHA256Stream.isAvailable keeps the answer).
    __builtin_cpu_init();
    return __builtin_cpu_supports("sha") && __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("ssse3") ? 1 : 0;
}

#else

int shoal_sha256_hw_available(void) { return 0; }
void shoal_sha256_hw_blocks(uint32_t state[8], const void *p, size_t blocks) { (void)state; (void)p; (void)blocks; }
void shoal_sha256_hw_blocks2(uint32_t a[8], const void *p, uint32_t b[8], const void *q, size_t blocks) {
    (void)a; (void)p; (void)b; (void)q; (void)blocks;
}

#endif
