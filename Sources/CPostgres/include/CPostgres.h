// CPostgres: the subset of libpq (PostgreSQL's client library) that Haul's fleet queue uses.
//
// Why this exists: `haul` must build and run on machines without libpq, and only `--queue`
// needs it. So nothing here links libpq: cpq_load() opens libpq.so.5 with dlopen and fills
// a table of typed function pointers with dlsym; the wrappers below call through it.
// Every name is prefixed `cpq_`/`CPQ` so it never clashes with libpq-fe.h; abi_check.c
// proves each signature and constant equal to libpq-fe.h's wherever that header is
// installed (CI installs libpq-dev).
#ifndef HAUL_CPOSTGRES_H
#define HAUL_CPOSTGRES_H

#include <stddef.h>

/// Opaque libpq handles: a connection (`PGconn`) and a statement's result (`PGresult`).
typedef struct cpq_conn cpq_conn;
typedef struct cpq_result cpq_result;

/// libpq's functions that Haul calls: X(name, return type, parameters). CONN, RESULT and the
/// enum types are parameters so that abi_check.c can expand the same list with libpq's own
/// types and compare every signature with the header's.
#define CPQ_FUNCTIONS(CONN, RESULT, CONN_STATUS, EXEC_STATUS, TX_STATUS, OID, NOTICE_FN)           \
  X(PQconnectdbParams, CONN *, (const char *const *keywords, const char *const *values, int expand)) \
  X(PQfinish, void, (CONN * conn))                                                                  \
  X(PQstatus, CONN_STATUS, (const CONN *conn))                                                       \
  X(PQtransactionStatus, TX_STATUS, (const CONN *conn))                                              \
  X(PQerrorMessage, char *, (const CONN *conn))                                                      \
  X(PQserverVersion, int, (const CONN *conn))                                                        \
  X(PQsetNoticeProcessor, NOTICE_FN, (CONN * conn, NOTICE_FN processor, void *arg))                 \
  X(PQexecParams, RESULT *,                                                                          \
    (CONN * conn, const char *command, int nParams, const OID *paramTypes,                         \
     const char *const *paramValues, const int *paramLengths, const int *paramFormats,             \
     int resultFormat))                                                                             \
  X(PQresultStatus, EXEC_STATUS, (const RESULT *result))                                             \
  X(PQresultErrorMessage, char *, (const RESULT *result))                                            \
  X(PQresultErrorField, char *, (const RESULT *result, int fieldcode))                              \
  X(PQntuples, int, (const RESULT *result))                                                          \
  X(PQnfields, int, (const RESULT *result))                                                          \
  X(PQgetvalue, char *, (const RESULT *result, int row, int column))                                \
  X(PQgetisnull, int, (const RESULT *result, int row, int column))                                  \
  X(PQcmdTuples, char *, (RESULT * result))                                                          \
  X(PQclear, void, (RESULT * result))                                                                \
  X(PQlibVersion, int, (void))

/// libpq's notice callback type (`PQnoticeProcessor`).
typedef void (*cpq_notice_processor)(void *arg, const char *message);

// MARK: - Constants (values are libpq's; abi_check.c asserts them)

/// ConnStatusType: only these two matter for a blocking connection.
enum { CPQ_CONNECTION_OK = 0, CPQ_CONNECTION_BAD = 1 };

/// ExecStatusType values a statement can end with.
enum {
  CPQ_PGRES_EMPTY_QUERY = 0,
  CPQ_PGRES_COMMAND_OK = 1,
  CPQ_PGRES_TUPLES_OK = 2,
  CPQ_PGRES_BAD_RESPONSE = 5,
  CPQ_PGRES_NONFATAL_ERROR = 6,
  CPQ_PGRES_FATAL_ERROR = 7,
};

/// PGTransactionStatusType: whether the session is inside a transaction (and whether it failed).
enum {
  CPQ_PQTRANS_IDLE = 0,
  CPQ_PQTRANS_ACTIVE = 1,
  CPQ_PQTRANS_INTRANS = 2,
  CPQ_PQTRANS_INERROR = 3,
  CPQ_PQTRANS_UNKNOWN = 4,
};

/// Error fields (PG_DIAG_*) read from a failed result.
enum {
  CPQ_DIAG_SQLSTATE = 'C',
  CPQ_DIAG_MESSAGE_PRIMARY = 'M',
  CPQ_DIAG_MESSAGE_DETAIL = 'D',
  CPQ_DIAG_MESSAGE_HINT = 'H',
};

// MARK: - Loading

/// Opens libpq once per process (thread-safe): `path` when given (a test or HAUL_LIBPQ can point
/// elsewhere), else libpq.so.5 (libpq.5.dylib on macOS). Returns 1 when every function was found;
/// else 0, with dlopen's or dlsym's reason copied into `error` (always NUL-terminated). Only the
/// first call's `path` counts.
int cpq_load(const char *path, char *error, size_t error_size);

/// libpq's version as PQlibVersion gives it (150014 for 15.14), or 0 when it is not loaded.
int cpq_lib_version(void);

// MARK: - Wrappers (call only after cpq_load returned 1)

/// Connects with keyword/value arrays (NULL-terminated); a `dbname` value holding a
/// postgresql:// URL is expanded, so the URL's own settings override the earlier keywords.
/// Blocks until connected or failed; never NULL except when out of memory.
cpq_conn *cpq_connect(const char *const *keywords, const char *const *values);
/// Closes the connection and frees it (also after a failed connect).
void cpq_finish(cpq_conn *conn);
/// CPQ_CONNECTION_OK or CPQ_CONNECTION_BAD (the server went away, or connecting failed).
int cpq_status(const cpq_conn *conn);
/// CPQ_PQTRANS_*: lets the caller roll back a transaction a failed statement left open.
int cpq_transaction_status(const cpq_conn *conn);
/// The last error on this connection; owned by the connection, valid until its next call.
const char *cpq_error_message(const cpq_conn *conn);
/// The server's version number (150014), or 0 when not connected.
int cpq_server_version(const cpq_conn *conn);
/// Drops the server's NOTICE messages, which libpq would otherwise print on stderr
/// (e.g. "relation already exists, skipping" from every migration).
void cpq_silence_notices(cpq_conn *conn);

/// Runs one statement with parameters bound as text ($1…$n; a NULL value is SQL NULL), never
/// spliced into the SQL; results come back as text. NULL only when out of memory.
cpq_result *cpq_exec(cpq_conn *conn, const char *sql, int count, const char *const *values);
/// CPQ_PGRES_*.
int cpq_result_status(const cpq_result *result);
/// The server's full error text for a failed statement ("" when none); owned by the result.
const char *cpq_result_error_message(const cpq_result *result);
/// One field of the error (CPQ_DIAG_*), or NULL when absent; owned by the result.
const char *cpq_result_error_field(const cpq_result *result, int field);
/// Rows and columns of a TUPLES_OK result.
int cpq_ntuples(const cpq_result *result);
int cpq_nfields(const cpq_result *result);
/// A value as text ("" for NULL: check cpq_getisnull); owned by the result.
const char *cpq_getvalue(const cpq_result *result, int row, int column);
int cpq_getisnull(const cpq_result *result, int row, int column);
/// Rows an INSERT/UPDATE/DELETE touched, as text ("" for other statements).
const char *cpq_cmd_tuples(cpq_result *result);
/// Frees a result (NULL is ignored).
void cpq_clear(cpq_result *result);

/// 1 when abi_check.c was compiled against the real libpq-fe.h (all declarations proven), else 0.
int cpq_abi_checked_against_headers(void);

#endif
