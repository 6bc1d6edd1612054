// Compile-time proof that CPostgres.h matches the real libpq-fe.h, wherever it is installed
// (CI installs libpq-dev): every function's full signature, every constant, the enum sizes.
// Without the header this file is empty; building never needs it.
#if __has_include(<postgresql/libpq-fe.h>)
#include <postgresql/libpq-fe.h>
#define CPQ_HAVE_HEADER 1
#elif __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#define CPQ_HAVE_HEADER 1
#endif

#ifdef CPQ_HAVE_HEADER
#include "CPostgres.h"

#define SAME(ours, theirs) _Static_assert((long)(ours) == (long)(theirs), #ours " != " #theirs)

// The same function list, expanded with libpq's own types: each declared pointer type must be
// exactly the type of the header's function (return type and every parameter).
#define X(name, ret, params)                                                                      \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret(*) params),                 \
                 #name " differs from libpq-fe.h");
CPQ_FUNCTIONS(PGconn, PGresult, ConnStatusType, ExecStatusType, PGTransactionStatusType, Oid,
              PQnoticeProcessor)
#undef X

// Our table declares the enums as int and Oid as unsigned int: the same size and passing.
SAME(sizeof(ConnStatusType), sizeof(int));
SAME(sizeof(ExecStatusType), sizeof(int));
SAME(sizeof(PGTransactionStatusType), sizeof(int));
SAME(sizeof(Oid), sizeof(unsigned int));
_Static_assert(__builtin_types_compatible_p(cpq_notice_processor, PQnoticeProcessor),
               "cpq_notice_processor differs from PQnoticeProcessor");

SAME(CPQ_CONNECTION_OK, CONNECTION_OK);
SAME(CPQ_CONNECTION_BAD, CONNECTION_BAD);
SAME(CPQ_PGRES_EMPTY_QUERY, PGRES_EMPTY_QUERY);
SAME(CPQ_PGRES_COMMAND_OK, PGRES_COMMAND_OK);
SAME(CPQ_PGRES_TUPLES_OK, PGRES_TUPLES_OK);
SAME(CPQ_PGRES_BAD_RESPONSE, PGRES_BAD_RESPONSE);
SAME(CPQ_PGRES_NONFATAL_ERROR, PGRES_NONFATAL_ERROR);
SAME(CPQ_PGRES_FATAL_ERROR, PGRES_FATAL_ERROR);
SAME(CPQ_PQTRANS_IDLE, PQTRANS_IDLE);
SAME(CPQ_PQTRANS_ACTIVE, PQTRANS_ACTIVE);
SAME(CPQ_PQTRANS_INTRANS, PQTRANS_INTRANS);
SAME(CPQ_PQTRANS_INERROR, PQTRANS_INERROR);
SAME(CPQ_PQTRANS_UNKNOWN, PQTRANS_UNKNOWN);
SAME(CPQ_DIAG_SQLSTATE, PG_DIAG_SQLSTATE);
SAME(CPQ_DIAG_MESSAGE_PRIMARY, PG_DIAG_MESSAGE_PRIMARY);
SAME(CPQ_DIAG_MESSAGE_DETAIL, PG_DIAG_MESSAGE_DETAIL);
SAME(CPQ_DIAG_MESSAGE_HINT, PG_DIAG_MESSAGE_HINT);

/// Marks that the check ran, so a test can see it was compiled against real headers.
int cpq_abi_checked_against_headers(void) { return 1; }
#else
int cpq_abi_checked_against_headers(void) { return 0; }
#endif
