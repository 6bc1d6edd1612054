// libpq loaded at run time: one dlopen, one dlsym per function into a table of typed
// pointers, and thin wrappers that call through it (Swift sees plain C functions).
#include "CPostgres.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

// The table: one typed pointer per function in CPQ_FUNCTIONS, declared with our opaque types.
typedef struct cpq_api {
#define X(name, ret, params) ret(*name) params;
  CPQ_FUNCTIONS(cpq_conn, cpq_result, int, int, int, unsigned int, cpq_notice_processor)
#undef X
} cpq_api;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static int load_tried = 0;
static int load_ok = 0;
static char load_error[512];
static cpq_api api;

#if defined(__APPLE__)
static const char *const default_library = "libpq.5.dylib";
#else
static const char *const default_library = "libpq.so.5";
#endif

static void load_locked(const char *path) {
  const char *file = (path && *path) ? path : default_library;
  // RTLD_LOCAL: libpq's symbols stay out of the global namespace (no clash with anything else).
  void *handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *reason = dlerror();
    snprintf(load_error, sizeof load_error, "%s", reason ? reason : file);
    return;
  }
  cpq_api table;
#define X(name, ret, params)                                                                      \
  *(void **)(&table.name) = dlsym(handle, #name);                                                 \
  if (!table.name) {                                                                              \
    snprintf(load_error, sizeof load_error, "%s has no %s (libpq too old?)", file, #name);         \
    dlclose(handle);                                                                              \
    return;                                                                                       \
  }
  CPQ_FUNCTIONS(cpq_conn, cpq_result, int, int, int, unsigned int, cpq_notice_processor)
#undef X
  api = table;
  load_ok = 1;  // The handle stays open for the life of the process.
}

int cpq_load(const char *path, char *error, size_t error_size) {
  pthread_mutex_lock(&load_lock);
  if (!load_tried) {
    load_tried = 1;
    load_locked(path);
  }
  int ok = load_ok;
  pthread_mutex_unlock(&load_lock);
  if (!ok && error && error_size > 0) snprintf(error, error_size, "%s", load_error);
  return ok;
}

int cpq_lib_version(void) {
  pthread_mutex_lock(&load_lock);
  int ok = load_ok;
  pthread_mutex_unlock(&load_lock);
  return ok ? api.PQlibVersion() : 0;
}

cpq_conn *cpq_connect(const char *const *keywords, const char *const *values) {
  return api.PQconnectdbParams(keywords, values, 1);
}
void cpq_finish(cpq_conn *conn) { api.PQfinish(conn); }
int cpq_status(const cpq_conn *conn) { return api.PQstatus(conn); }
int cpq_transaction_status(const cpq_conn *conn) { return api.PQtransactionStatus(conn); }
const char *cpq_error_message(const cpq_conn *conn) { return api.PQerrorMessage(conn); }
int cpq_server_version(const cpq_conn *conn) { return api.PQserverVersion(conn); }

static void ignore_notice(void *arg, const char *message) {
  (void)arg;
  (void)message;
}
void cpq_silence_notices(cpq_conn *conn) { api.PQsetNoticeProcessor(conn, ignore_notice, NULL); }

cpq_result *cpq_exec(cpq_conn *conn, const char *sql, int count, const char *const *values) {
  // No parameter types (the server infers them from the SQL, which casts where it matters),
  // no lengths or formats (text), text results.
  return api.PQexecParams(conn, sql, count, NULL, values, NULL, NULL, 0);
}
int cpq_result_status(const cpq_result *result) { return api.PQresultStatus(result); }
const char *cpq_result_error_message(const cpq_result *result) {
  return api.PQresultErrorMessage(result);
}
const char *cpq_result_error_field(const cpq_result *result, int field) {
  return api.PQresultErrorField(result, field);
}
int cpq_ntuples(const cpq_result *result) { return api.PQntuples(result); }
int cpq_nfields(const cpq_result *result) { return api.PQnfields(result); }
const char *cpq_getvalue(const cpq_result *result, int row, int column) {
  return api.PQgetvalue(result, row, column);
}
int cpq_getisnull(const cpq_result *result, int row, int column) {
  return api.PQgetisnull(result, row, column);
}
const char *cpq_cmd_tuples(cpq_result *result) { return api.PQcmdTuples(result); }
void cpq_clear(cpq_result *result) {
  if (result) api.PQclear(result);
}
