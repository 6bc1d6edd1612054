// Typed wrappers over libevent 2.1; its prototypes are in libevent.h (no event2 headers needed).
#include "libevent.h"

struct event_base *cevent_base_new(void) { return event_base_new(); }
void cevent_base_free(struct event_base *base) { event_base_free(base); }
int cevent_base_run(struct event_base *base) { return event_base_loop(base, CEVENT_EVLOOP_NO_EXIT_ON_EMPTY); }
int cevent_base_loopbreak(struct event_base *base) { return event_base_loopbreak(base); }
const char *cevent_version(void) { return event_get_version(); }
void cevent_set_log_callback(cevent_log_callback callback) { event_set_log_callback(callback); }

struct event *cevent_new(struct event_base *base, int fd, short events, cevent_callback callback, void *arg) {
  return event_new(base, fd, events, callback, arg);
}
int cevent_add(struct event *event, const struct timeval *timeout) { return event_add(event, timeout); }
int cevent_del(struct event *event) { return event_del(event); }
void cevent_free(struct event *event) { event_free(event); }
void cevent_active(struct event *event, short events) { event_active(event, events, 0); }

struct evhttp *cevent_http_new(struct event_base *base) { return evhttp_new(base); }
void cevent_http_free(struct evhttp *http) { evhttp_free(http); }
struct evhttp_bound_socket *cevent_http_accept_socket(struct evhttp *http, int fd) {
  return evhttp_accept_socket_with_handle(http, fd);
}
struct evconnlistener *cevent_http_bound_listener(struct evhttp_bound_socket *bound) {
  return evhttp_bound_socket_get_listener(bound);
}
void cevent_http_set_handler(struct evhttp *http, cevent_request_callback callback, void *arg) {
  evhttp_set_gencb(http, callback, arg);
}
void cevent_http_set_bufferevent_factory(struct evhttp *http, cevent_bufferevent_factory factory, void *arg) {
  evhttp_set_bevcb(http, factory, arg);
}
void cevent_http_set_timeout(struct evhttp *http, const struct timeval *timeout) {
  evhttp_set_timeout_tv(http, timeout);
}
void cevent_http_set_max_headers_size(struct evhttp *http, ssize_t bytes) { evhttp_set_max_headers_size(http, bytes); }
void cevent_http_set_max_body_size(struct evhttp *http, ssize_t bytes) { evhttp_set_max_body_size(http, bytes); }
void cevent_http_set_allowed_methods(struct evhttp *http, uint16_t methods) {
  evhttp_set_allowed_methods(http, methods);
}

unsigned int cevent_request_method(const struct evhttp_request *request) {
  return evhttp_request_get_command(request);
}
const char *cevent_request_uri(const struct evhttp_request *request) { return evhttp_request_get_uri(request); }
const char *cevent_request_path(const struct evhttp_request *request) {
  const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(request);
  return uri == 0 ? 0 : evhttp_uri_get_path(uri);
}
const char *cevent_request_query(const struct evhttp_request *request) {
  const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(request);
  return uri == 0 ? 0 : evhttp_uri_get_query(uri);
}
struct evkeyvalq *cevent_request_input_headers(struct evhttp_request *request) {
  return evhttp_request_get_input_headers(request);
}
struct evkeyvalq *cevent_request_output_headers(struct evhttp_request *request) {
  return evhttp_request_get_output_headers(request);
}
struct evbuffer *cevent_request_body(struct evhttp_request *request) {
  return evhttp_request_get_input_buffer(request);
}
struct evhttp_connection *cevent_request_connection(struct evhttp_request *request) {
  return evhttp_request_get_connection(request);
}
const char *cevent_header_find(const struct evkeyvalq *headers, const char *name) {
  return evhttp_find_header(headers, name);
}
int cevent_header_add(struct evkeyvalq *headers, const char *name, const char *value) {
  return evhttp_add_header(headers, name, value);
}
int cevent_header_remove(struct evkeyvalq *headers, const char *name) { return evhttp_remove_header(headers, name); }
void cevent_send_reply(struct evhttp_request *request, int code, const char *reason, struct evbuffer *body) {
  evhttp_send_reply(request, code, reason, body);
}
void cevent_send_reply_start(struct evhttp_request *request, int code, const char *reason) {
  evhttp_send_reply_start(request, code, reason);
}
struct bufferevent *cevent_connection_bufferevent(struct evhttp_connection *connection) {
  return evhttp_connection_get_bufferevent(connection);
}
void cevent_connection_free(struct evhttp_connection *connection) { evhttp_connection_free(connection); }

struct evhttp_connection *cevent_http_connection_new(struct event_base *base, const char *address, uint16_t port) {
  return evhttp_connection_base_new(base, 0, address, port);
}
void cevent_connection_set_timeout(struct evhttp_connection *connection, int seconds) {
  evhttp_connection_set_timeout(connection, seconds);
}
struct evhttp_request *cevent_request_new(cevent_request_callback callback, void *arg) {
  return evhttp_request_new(callback, arg);
}
struct evbuffer *cevent_request_output_body(struct evhttp_request *request) {
  return evhttp_request_get_output_buffer(request);
}
int cevent_make_request(struct evhttp_connection *connection, struct evhttp_request *request, unsigned int method,
                        const char *uri) {
  return evhttp_make_request(connection, request, method, uri);
}
int cevent_request_response_code(const struct evhttp_request *request) {
  return evhttp_request_get_response_code(request);
}

struct evbuffer *cevent_buffer_new(void) { return evbuffer_new(); }
void cevent_buffer_free(struct evbuffer *buffer) { evbuffer_free(buffer); }
int cevent_buffer_add(struct evbuffer *buffer, const void *bytes, size_t count) {
  return evbuffer_add(buffer, bytes, count);
}
size_t cevent_buffer_length(const struct evbuffer *buffer) { return evbuffer_get_length(buffer); }
ssize_t cevent_buffer_copyout(struct evbuffer *buffer, void *out, size_t count) {
  return evbuffer_copyout(buffer, out, count);
}
int cevent_buffer_drain(struct evbuffer *buffer, size_t count) { return evbuffer_drain(buffer, count); }

struct bufferevent *cevent_bufferevent_socket_new(struct event_base *base) {
  return bufferevent_socket_new(base, -1, CEVENT_BEV_OPT_CLOSE_ON_FREE);
}
void cevent_bufferevent_setcb(struct bufferevent *bev, cevent_data_callback read, cevent_data_callback write,
                              cevent_status_callback status, void *arg) {
  bufferevent_setcb(bev, read, write, status, arg);
}
cevent_status_callback cevent_bufferevent_status_callback(struct bufferevent *bev) {
  cevent_status_callback status = 0;
  bufferevent_getcb(bev, 0, 0, &status, 0);
  return status;
}
int cevent_bufferevent_enable(struct bufferevent *bev, short events) { return bufferevent_enable(bev, events); }
int cevent_bufferevent_disable(struct bufferevent *bev, short events) { return bufferevent_disable(bev, events); }
struct evbuffer *cevent_bufferevent_input(struct bufferevent *bev) { return bufferevent_get_input(bev); }
struct evbuffer *cevent_bufferevent_output(struct bufferevent *bev) { return bufferevent_get_output(bev); }
int cevent_bufferevent_write(struct bufferevent *bev, const void *bytes, size_t count) {
  return bufferevent_write(bev, bytes, count);
}
int cevent_bufferevent_set_timeouts(struct bufferevent *bev, const struct timeval *read, const struct timeval *write) {
  return bufferevent_set_timeouts(bev, read, write);
}
void cevent_bufferevent_set_read_limit(struct bufferevent *bev, size_t high) {
  bufferevent_setwatermark(bev, CEVENT_EV_READ, 0, high);
}
int cevent_bufferevent_fd(struct bufferevent *bev) { return bufferevent_getfd(bev); }
void cevent_bufferevent_incref(struct bufferevent *bev) { bufferevent_incref(bev); }
int cevent_bufferevent_decref(struct bufferevent *bev) { return bufferevent_decref(bev); }

void cevent_listener_set_error_callback(struct evconnlistener *listener, cevent_listener_error_callback callback) {
  evconnlistener_set_error_cb(listener, callback);
}
int cevent_listener_enable(struct evconnlistener *listener) { return evconnlistener_enable(listener); }
int cevent_listener_disable(struct evconnlistener *listener) { return evconnlistener_disable(listener); }
