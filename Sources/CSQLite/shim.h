#ifndef HEARTH_CSQLITE_SHIM_H
#define HEARTH_CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro casting -1 to a function pointer; Swift cannot import it.
static inline sqlite3_destructor_type hearth_sqlite_transient(void) { return SQLITE_TRANSIENT; }
/// sqlite3_config is variadic, which Swift cannot call. Memory statistics off: with them on, every allocation
/// of every connection takes one process-wide mutex (sqlite3_memory_used and soft heap limits, which need them,
/// are not used). Must run before SQLite initializes; SQLITE_MISUSE after (harmless: the default stays).
static inline int hearth_sqlite_disable_memstatus(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }
/// sqlite3_db_config is variadic too. Closing the last connection then leaves the WAL as it is (no checkpoint
/// into the database file, and the -wal file stays): for a store refused at open, whose files must be left
/// exactly as they were found.
static inline int hearth_sqlite_keep_wal_on_close(sqlite3 *db) { return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0); }
#endif
