// CSQLite: the system SQLite 3 C API, exposed to Swift. Nothing else lives here.
#ifndef SHOAL_CSQLITE_SHIM_H
#define SHOAL_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif
