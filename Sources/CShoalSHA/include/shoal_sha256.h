// CShoalSHA: the SHA-256 compression function with the processor's SHA extensions (x86-64),
// one stream or two at once, behind ShoalWire's SHA256Stream (asset chunks, writer-log hashes).
#ifndef SHOAL_SHA256_H
#define SHOAL_SHA256_H

#include <stddef.h>
#include <stdint.h>

/// Whether the functions below can run here (x86-64 with the SHA extensions and SSE 4.1).
/// Elsewhere they must not be called.
int shoal_sha256_hw_available(void);

/// Runs SHA-256's compression over `blocks` 64-byte blocks at `p`, updating `state` (the eight
/// working words H0…H7, in the standard's order). Call only when shoal_sha256_hw_available() is 1.
void shoal_sha256_hw_blocks(uint32_t state[8], const void *p, size_t blocks);

/// Two independent streams at once: `blocks` blocks at `p` into `a`, and as many at `q` into `b`.
/// One stream waits on each round instruction's latency; two fill the gaps, so the pair costs
/// little more than one. Call only when shoal_sha256_hw_available() is 1.
void shoal_sha256_hw_blocks2(uint32_t a[8], const void *p, uint32_t b[8], const void *q, size_t blocks);

#endif
