// CZstd: the system libzstd, exposed to Swift. Nothing else lives here.
#ifndef SHOAL_CZSTD_SHIM_H
#define SHOAL_CZSTD_SHIM_H
#include <zstd.h>
#include <zstd_errors.h>
#include <zdict.h>
#endif
