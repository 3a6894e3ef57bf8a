// CSQLiteBench: the system SQLite, for the store suite's raw-insert peer.
#include <sqlite3.h>
