#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot import.
static inline sqlite3_destructor_type CSQLite_transient(void) { return SQLITE_TRANSIENT; }

/// Binds text that SQLite copies, so the Swift buffer may go away after the call.
static inline int CSQLite_bind_text(sqlite3_stmt *stmt, int index, const char *text, int length) {
    return sqlite3_bind_text(stmt, index, text, length, SQLITE_TRANSIENT);
}

/// Binds a blob that SQLite copies.
static inline int CSQLite_bind_blob(sqlite3_stmt *stmt, int index, const void *data, int length) {
    return sqlite3_bind_blob(stmt, index, data, length, SQLITE_TRANSIENT);
}
#endif
