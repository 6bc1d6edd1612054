// CEvent: the subset of libevent 2.1 (event loop, evhttp, bufferevents, listeners) that
// `haul daemon` uses.
//
// Why this exists: libevent-2.1.so.7 is on every target machine but its headers are not, and
// `swift build` must work without them. Every name here is prefixed `cevent_`/`CEVENT_`;
// libevent's own prototypes are declared by hand in ../libevent.h, and abi_check.c proves them
// and every constant here equal to event2/*.h wherever those are installed (CI installs
// libevent-dev). Handles are libevent's own opaque structs (Swift sees OpaquePointer).
//
// Threads: libevent is used without its locking (libevent_pthreads is a separate package that a
// fresh machine may lack), so every call on a base and everything attached to it must come from
// the one thread that runs that base's loop.
#ifndef HAUL_CEVENT_H
#define HAUL_CEVENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <sys/types.h>

struct event_base;
struct event;
struct evhttp;
struct evhttp_bound_socket;
struct evhttp_request;
struct evhttp_connection;
struct evhttp_uri;
struct evkeyvalq;
struct evbuffer;
struct bufferevent;
struct evconnlistener;

/// An event fired (fd, what happened, user data).
typedef void (*cevent_callback)(int fd, short events, void *arg);
/// evhttp's handler for a complete request.
typedef void (*cevent_request_callback)(struct evhttp_request *request, void *arg);
/// evhttp asks it for the bufferevent of each new connection.
typedef struct bufferevent *(*cevent_bufferevent_factory)(struct event_base *base, void *arg);
/// Data arrived or was written on a bufferevent.
typedef void (*cevent_data_callback)(struct bufferevent *bev, void *arg);
/// EOF, error or timeout on a bufferevent (`what` holds CEVENT_BEV_EVENT_* bits).
typedef void (*cevent_status_callback)(struct bufferevent *bev, short what, void *arg);
/// accept() failed with something other than EAGAIN (usually EMFILE).
typedef void (*cevent_listener_error_callback)(struct evconnlistener *listener, void *arg);
/// libevent's own warnings and errors.
typedef void (*cevent_log_callback)(int severity, const char *message);

// MARK: - Constants (values are libevent's; abi_check.c asserts them)

enum {
  CEVENT_EV_TIMEOUT = 0x01,
  CEVENT_EV_READ = 0x02,
  CEVENT_EV_WRITE = 0x04,
  CEVENT_EV_PERSIST = 0x10,
  CEVENT_EVLOOP_NO_EXIT_ON_EMPTY = 0x04,

  CEVENT_BEV_EVENT_READING = 0x01,
  CEVENT_BEV_EVENT_WRITING = 0x02,
  CEVENT_BEV_EVENT_EOF = 0x10,
  CEVENT_BEV_EVENT_ERROR = 0x20,
  CEVENT_BEV_EVENT_TIMEOUT = 0x40,
  CEVENT_BEV_OPT_CLOSE_ON_FREE = 0x01,

  CEVENT_HTTP_GET = 1 << 0,
  CEVENT_HTTP_POST = 1 << 1,
  CEVENT_HTTP_HEAD = 1 << 2,
  CEVENT_HTTP_PUT = 1 << 3,
  CEVENT_HTTP_DELETE = 1 << 4,
  CEVENT_HTTP_OPTIONS = 1 << 5,
  CEVENT_HTTP_TRACE = 1 << 6,
  CEVENT_HTTP_CONNECT = 1 << 7,
  CEVENT_HTTP_PATCH = 1 << 8,

  CEVENT_LOG_DEBUG = 0,
  CEVENT_LOG_MSG = 1,
  CEVENT_LOG_WARN = 2,
  CEVENT_LOG_ERR = 3,
};

// MARK: - Event base, events and timers

struct event_base *cevent_base_new(void);
void cevent_base_free(struct event_base *base);
/// Runs the loop until cevent_base_loopbreak, even while no event is pending.
int cevent_base_run(struct event_base *base);
/// Makes the running loop return after the current callback (loop thread only).
int cevent_base_loopbreak(struct event_base *base);
/// libevent's version text ("2.1.12-stable").
const char *cevent_version(void);
/// Routes libevent's warnings (e.g. a failed accept) to the daemon's log instead of stderr.
void cevent_set_log_callback(cevent_log_callback callback);

/// fd -1 makes a timer; CEVENT_EV_PERSIST keeps it armed after it fires.
struct event *cevent_new(struct event_base *base, int fd, short events, cevent_callback callback, void *arg);
/// Arms the event; `timeout` NULL means no timeout.
int cevent_add(struct event *event, const struct timeval *timeout);
int cevent_del(struct event *event);
void cevent_free(struct event *event);
/// Makes the event run in the current loop iteration as if `events` had happened (loop thread only).
void cevent_active(struct event *event, short events);

// MARK: - evhttp server

struct evhttp *cevent_http_new(struct event_base *base);
/// Frees the server with every connection and request still attached to it.
void cevent_http_free(struct evhttp *http);
/// Serves on a socket the caller bound and made listening (non-blocking, close-on-exec).
struct evhttp_bound_socket *cevent_http_accept_socket(struct evhttp *http, int fd);
struct evconnlistener *cevent_http_bound_listener(struct evhttp_bound_socket *bound);
/// The handler for every request.
void cevent_http_set_handler(struct evhttp *http, cevent_request_callback callback, void *arg);
/// The factory for each new connection's bufferevent (how the daemon counts connections).
void cevent_http_set_bufferevent_factory(struct evhttp *http, cevent_bufferevent_factory factory, void *arg);
/// Read and write timeout of every connection (idle keep-alive included).
void cevent_http_set_timeout(struct evhttp *http, const struct timeval *timeout);
void cevent_http_set_max_headers_size(struct evhttp *http, ssize_t bytes);
/// Larger bodies get 413 and the connection is closed.
void cevent_http_set_max_body_size(struct evhttp *http, ssize_t bytes);
/// Other methods get 501 before the handler runs; `methods` is CEVENT_HTTP_* bits.
void cevent_http_set_allowed_methods(struct evhttp *http, uint16_t methods);

// MARK: - Requests and replies (valid until the reply is sent)

/// One CEVENT_HTTP_* value.
unsigned int cevent_request_method(const struct evhttp_request *request);
/// The request target as sent ("/jsonrpc?method=…"); NULL for a request evhttp failed to parse.
const char *cevent_request_uri(const struct evhttp_request *request);
/// The parsed target's path and query (NULL when absent).
const char *cevent_request_path(const struct evhttp_request *request);
const char *cevent_request_query(const struct evhttp_request *request);
struct evkeyvalq *cevent_request_input_headers(struct evhttp_request *request);
struct evkeyvalq *cevent_request_output_headers(struct evhttp_request *request);
/// The request body received so far (all of it when the handler runs).
struct evbuffer *cevent_request_body(struct evhttp_request *request);
/// NULL once evhttp has dropped the connection of a request still waiting for its reply.
struct evhttp_connection *cevent_request_connection(struct evhttp_request *request);
/// The first header of that name (case-insensitive), NULL if none.
const char *cevent_header_find(const struct evkeyvalq *headers, const char *name);
int cevent_header_add(struct evkeyvalq *headers, const char *name, const char *value);
int cevent_header_remove(struct evkeyvalq *headers, const char *name);
/// Sends status and body (may be NULL); evhttp adds Content-Length and frees the request after.
void cevent_send_reply(struct evhttp_request *request, int code, const char *reason, struct evbuffer *body);
/// Sends the status line and headers only, without chunked encoding for 1xx codes: the 101 of a
/// WebSocket upgrade, after which the connection's bufferevent is the caller's to drive.
void cevent_send_reply_start(struct evhttp_request *request, int code, const char *reason);

struct bufferevent *cevent_connection_bufferevent(struct evhttp_connection *connection);
/// Closes the connection and frees every request on it (for an upgraded WebSocket connection).
void cevent_connection_free(struct evhttp_connection *connection);

// MARK: - Client requests (the daemon's own JSON-RPC client)

/// A client connection to address:port (an IP literal; no DNS), connecting on first request.
struct evhttp_connection *cevent_http_connection_new(struct event_base *base, const char *address, uint16_t port);
/// Seconds a request may wait for its response.
void cevent_connection_set_timeout(struct evhttp_connection *connection, int seconds);
/// A request whose callback gets it back with the response (or NULL when the connection failed);
/// evhttp frees it after that callback.
struct evhttp_request *cevent_request_new(cevent_request_callback callback, void *arg);
/// The body to send.
struct evbuffer *cevent_request_output_body(struct evhttp_request *request);
/// Sends it (`method` is one CEVENT_HTTP_* value); 0 on success, else the request was freed.
int cevent_make_request(struct evhttp_connection *connection, struct evhttp_request *request, unsigned int method,
                        const char *uri);
/// A response's status code.
int cevent_request_response_code(const struct evhttp_request *request);

// MARK: - Buffers

struct evbuffer *cevent_buffer_new(void);
void cevent_buffer_free(struct evbuffer *buffer);
int cevent_buffer_add(struct evbuffer *buffer, const void *bytes, size_t count);
size_t cevent_buffer_length(const struct evbuffer *buffer);
/// Copies up to `count` bytes from the front without draining them; returns how many.
ssize_t cevent_buffer_copyout(struct evbuffer *buffer, void *out, size_t count);
int cevent_buffer_drain(struct evbuffer *buffer, size_t count);

// MARK: - Bufferevents (the connections)

/// A socket bufferevent with no fd yet, closing its fd when freed.
struct bufferevent *cevent_bufferevent_socket_new(struct event_base *base);
void cevent_bufferevent_setcb(struct bufferevent *bev, cevent_data_callback read, cevent_data_callback write,
                              cevent_status_callback status, void *arg);
/// The status callback now set (NULL after libevent freed it while a reference is held).
cevent_status_callback cevent_bufferevent_status_callback(struct bufferevent *bev);
int cevent_bufferevent_enable(struct bufferevent *bev, short events);
int cevent_bufferevent_disable(struct bufferevent *bev, short events);
struct evbuffer *cevent_bufferevent_input(struct bufferevent *bev);
struct evbuffer *cevent_bufferevent_output(struct bufferevent *bev);
int cevent_bufferevent_write(struct bufferevent *bev, const void *bytes, size_t count);
/// NULL disables that direction's timeout.
int cevent_bufferevent_set_timeouts(struct bufferevent *bev, const struct timeval *read, const struct timeval *write);
/// Stops reading from the socket while the input buffer holds `high` bytes or more (0: no limit).
void cevent_bufferevent_set_read_limit(struct bufferevent *bev, size_t high);
int cevent_bufferevent_fd(struct bufferevent *bev);
/// A reference of the caller's: the memory stays valid (and the fd open) after libevent frees it.
void cevent_bufferevent_incref(struct bufferevent *bev);
/// Drops that reference; the last one closes the fd and frees the memory.
int cevent_bufferevent_decref(struct bufferevent *bev);

// MARK: - Listeners (under evhttp's bound sockets)

/// Note: libevent calls it with evhttp's argument, not one of ours.
void cevent_listener_set_error_callback(struct evconnlistener *listener, cevent_listener_error_callback callback);
int cevent_listener_enable(struct evconnlistener *listener);
int cevent_listener_disable(struct evconnlistener *listener);

/// 1 when abi_check.c was compiled against the real event2 headers (all proven), else 0.
int cevent_abi_checked_against_headers(void);

#endif
