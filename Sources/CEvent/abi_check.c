// Compile-time proof that CEvent matches the real libevent 2.1 headers, wherever they are
// installed (CI installs libevent-dev). The hand-written prototypes of libevent.h are included
// after the real ones, so a different signature fails to compile; constants are asserted below.
// Without the headers this file is empty.
#if __has_include(<event2/event.h>)
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include "libevent.h"

#define SAME(ours, theirs) _Static_assert((long)(ours) == (long)(theirs), #ours " != " #theirs)

SAME(CEVENT_EV_TIMEOUT, EV_TIMEOUT);
SAME(CEVENT_EV_READ, EV_READ);
SAME(CEVENT_EV_WRITE, EV_WRITE);
SAME(CEVENT_EV_PERSIST, EV_PERSIST);
SAME(CEVENT_EVLOOP_NO_EXIT_ON_EMPTY, EVLOOP_NO_EXIT_ON_EMPTY);

SAME(CEVENT_BEV_EVENT_READING, BEV_EVENT_READING);
SAME(CEVENT_BEV_EVENT_WRITING, BEV_EVENT_WRITING);
SAME(CEVENT_BEV_EVENT_EOF, BEV_EVENT_EOF);
SAME(CEVENT_BEV_EVENT_ERROR, BEV_EVENT_ERROR);
SAME(CEVENT_BEV_EVENT_TIMEOUT, BEV_EVENT_TIMEOUT);
SAME(CEVENT_BEV_OPT_CLOSE_ON_FREE, BEV_OPT_CLOSE_ON_FREE);

SAME(CEVENT_HTTP_GET, EVHTTP_REQ_GET);
SAME(CEVENT_HTTP_POST, EVHTTP_REQ_POST);
SAME(CEVENT_HTTP_HEAD, EVHTTP_REQ_HEAD);
SAME(CEVENT_HTTP_PUT, EVHTTP_REQ_PUT);
SAME(CEVENT_HTTP_DELETE, EVHTTP_REQ_DELETE);
SAME(CEVENT_HTTP_OPTIONS, EVHTTP_REQ_OPTIONS);
SAME(CEVENT_HTTP_TRACE, EVHTTP_REQ_TRACE);
SAME(CEVENT_HTTP_CONNECT, EVHTTP_REQ_CONNECT);
SAME(CEVENT_HTTP_PATCH, EVHTTP_REQ_PATCH);

SAME(CEVENT_LOG_DEBUG, EVENT_LOG_DEBUG);
SAME(CEVENT_LOG_MSG, EVENT_LOG_MSG);
SAME(CEVENT_LOG_WARN, EVENT_LOG_WARN);
SAME(CEVENT_LOG_ERR, EVENT_LOG_ERR);

// The callback types Swift fills in are the ones libevent calls.
_Static_assert(__builtin_types_compatible_p(cevent_callback, event_callback_fn), "event callback");
_Static_assert(__builtin_types_compatible_p(cevent_data_callback, bufferevent_data_cb), "data callback");
_Static_assert(__builtin_types_compatible_p(cevent_status_callback, bufferevent_event_cb), "status callback");
_Static_assert(__builtin_types_compatible_p(cevent_listener_error_callback, evconnlistener_errorcb),
               "listener error callback");
_Static_assert(__builtin_types_compatible_p(cevent_log_callback, event_log_cb), "log callback");
_Static_assert(__builtin_types_compatible_p(int, evutil_socket_t), "sockets are ints");
_Static_assert(__builtin_types_compatible_p(ssize_t, ev_ssize_t), "ev_ssize_t");
_Static_assert(__builtin_types_compatible_p(uint16_t, ev_uint16_t), "ev_uint16_t");
_Static_assert(sizeof(enum evhttp_cmd_type) == sizeof(unsigned int), "evhttp_cmd_type fits");

/// Marks that the check ran, so a test can see it was compiled against real headers.
int cevent_abi_checked_against_headers(void) { return 1; }
#else
int cevent_abi_checked_against_headers(void) { return 0; }
#endif
