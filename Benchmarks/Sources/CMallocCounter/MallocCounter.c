// MallocCounter: interposes glibc's allocation entry points to count calls, forwarding each to glibc.
//
// The executable defines malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign,
// valloc and pvalloc; the dynamic linker resolves every library's calls (the Swift runtime's
// included) to these, which bump one relaxed atomic counter and call glibc's own __libc_*
// implementation. free is not interposed: the memory still comes from glibc's allocator.
#include "MallocCounter.h"

#if defined(__linux__) && defined(__GLIBC__)
#include <errno.h>
#include <stddef.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);

static uint64_t allocations;

static inline void count_one(void) { __atomic_fetch_add(&allocations, 1, __ATOMIC_RELAXED); }

void *malloc(size_t size) {
    count_one();
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    count_one();
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    count_one();
    return __libc_realloc(pointer, size);
}

void *memalign(size_t alignment, size_t size) {
    count_one();
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    count_one();
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    count_one();
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    void *p = __libc_memalign(alignment, size);
    if (p == NULL && size != 0) return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t size) {
    count_one();
    return __libc_valloc(size);
}

void *pvalloc(size_t size) {
    count_one();
    return __libc_pvalloc(size);
}

uint64_t shoal_bench_malloc_count(void) { return __atomic_load_n(&allocations, __ATOMIC_RELAXED); }

int shoal_bench_malloc_counting_supported(void) { return 1; }

int malloc_trim(size_t pad);

void shoal_bench_malloc_trim(void) { (void)malloc_trim(0); }

#else

uint64_t shoal_bench_malloc_count(void) { return 0; }

int shoal_bench_malloc_counting_supported(void) { return 0; }

void shoal_bench_malloc_trim(void) {}

#endif
