// CShoalCRC: CRC-32C with the processor's instruction (SSE 4.2 on x86-64), for ShoalWire's frames.
#ifndef SHOAL_CRC32C_H
#define SHOAL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/// Whether shoal_crc32c_hw can run here (x86-64 with SSE 4.2); checked once per process.
int shoal_crc32c_hw_available(void);

/// Updates a CRC-32C register (pre-inverted, as the algorithm keeps it) with `n` bytes at `p`
/// using the processor's CRC32 instruction. Call only when shoal_crc32c_hw_available() is 1.
uint32_t shoal_crc32c_hw(uint32_t crc, const void *p, size_t n);

#endif
