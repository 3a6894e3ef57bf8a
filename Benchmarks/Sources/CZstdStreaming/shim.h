// CZstdStreaming: libzstd's streaming API (ZSTD_compressStream2, ZSTD_decompressStream) for the benchmarks.
#ifndef SHOAL_BENCH_CZSTD_STREAMING_H
#define SHOAL_BENCH_CZSTD_STREAMING_H
#include <zstd.h>
#endif
