// MallocCounter: how many allocations (malloc, calloc, realloc, memalign and friends) the process made.
#ifndef SHOAL_BENCH_MALLOC_COUNTER_H
#define SHOAL_BENCH_MALLOC_COUNTER_H

#include <stdint.h>

/// Allocation calls made so far by every thread, counted only where this library interposes
/// glibc's allocator (Linux with glibc); elsewhere it stays 0.
uint64_t shoal_bench_malloc_count(void);

/// Whether allocations are being counted on this platform.
int shoal_bench_malloc_counting_supported(void);

/// Returns the allocator's free memory to the system where it can (glibc's `malloc_trim`), so a
/// resident-set baseline taken next does not include what earlier work freed.
void shoal_bench_malloc_trim(void);

#endif
