// CSQLite: the system SQLite (sqlite3.h ships with libsqlite3-dev and is on every target
// machine), imported as is, plus typed wrappers for the few things Swift cannot call
// directly. Linked by its soname (Package.swift), as CCurl links libcurl.
#ifndef HAUL_CSQLITE_H
#define HAUL_CSQLITE_H

#include <sqlite3.h>

/// `sqlite3_bind_text` with SQLITE_TRANSIENT (SQLite copies the bytes): the macro casts -1
/// to a function pointer, which Swift cannot import.
int csqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length);

/// `sqlite3_db_config(db, op, value, NULL)` for the integer switches: the function is
/// variadic, which Swift cannot call. Returns the SQLite result code.
int csqlite_db_config_flag(sqlite3 *db, int op, int value);

#endif
