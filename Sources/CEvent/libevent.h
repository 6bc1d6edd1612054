// libevent's own prototypes, declared by hand with the types of event2/*.h (on Linux
// evutil_socket_t is int, ev_ssize_t ssize_t, ev_uint16_t uint16_t, and enum evhttp_cmd_type,
// all positive, unsigned int). shim.c calls them; abi_check.c includes this file after the real
// headers, so any difference is a "conflicting types" error.
#ifndef HAUL_CEVENT_LIBEVENT_H
#define HAUL_CEVENT_LIBEVENT_H

#include "CEvent.h"

struct evdns_base;

struct event_base *event_base_new(void);
void event_base_free(struct event_base *);
int event_base_loop(struct event_base *, int);
int event_base_loopbreak(struct event_base *);
const char *event_get_version(void);
void event_set_log_callback(void (*cb)(int severity, const char *msg));

struct event *event_new(struct event_base *, int, short, void (*)(int, short, void *), void *);
int event_add(struct event *ev, const struct timeval *timeout);
int event_del(struct event *);
void event_free(struct event *);
void event_active(struct event *ev, int res, short ncalls);

struct evhttp *evhttp_new(struct event_base *base);
void evhttp_free(struct evhttp *http);
struct evhttp_bound_socket *evhttp_accept_socket_with_handle(struct evhttp *http, int fd);
struct evconnlistener *evhttp_bound_socket_get_listener(struct evhttp_bound_socket *bound);
void evhttp_set_gencb(struct evhttp *http, void (*cb)(struct evhttp_request *, void *), void *arg);
void evhttp_set_bevcb(struct evhttp *http, struct bufferevent *(*cb)(struct event_base *, void *), void *arg);
void evhttp_set_timeout_tv(struct evhttp *http, const struct timeval *tv);
void evhttp_set_max_headers_size(struct evhttp *http, ssize_t max_headers_size);
void evhttp_set_max_body_size(struct evhttp *http, ssize_t max_body_size);
void evhttp_set_allowed_methods(struct evhttp *http, uint16_t methods);

unsigned int evhttp_request_get_command(const struct evhttp_request *req);
const char *evhttp_request_get_uri(const struct evhttp_request *req);
const struct evhttp_uri *evhttp_request_get_evhttp_uri(const struct evhttp_request *req);
const char *evhttp_uri_get_path(const struct evhttp_uri *uri);
const char *evhttp_uri_get_query(const struct evhttp_uri *uri);
struct evkeyvalq *evhttp_request_get_input_headers(struct evhttp_request *req);
struct evkeyvalq *evhttp_request_get_output_headers(struct evhttp_request *req);
struct evbuffer *evhttp_request_get_input_buffer(struct evhttp_request *req);
struct evhttp_connection *evhttp_request_get_connection(struct evhttp_request *req);
const char *evhttp_find_header(const struct evkeyvalq *headers, const char *key);
int evhttp_add_header(struct evkeyvalq *headers, const char *key, const char *value);
int evhttp_remove_header(struct evkeyvalq *headers, const char *key);
void evhttp_send_reply(struct evhttp_request *req, int code, const char *reason, struct evbuffer *databuf);
void evhttp_send_reply_start(struct evhttp_request *req, int code, const char *reason);
struct bufferevent *evhttp_connection_get_bufferevent(struct evhttp_connection *evcon);
void evhttp_connection_free(struct evhttp_connection *evcon);

struct evhttp_connection *evhttp_connection_base_new(struct event_base *base, struct evdns_base *dnsbase,
                                                     const char *address, uint16_t port);
void evhttp_connection_set_timeout(struct evhttp_connection *evcon, int timeout_in_secs);
struct evhttp_request *evhttp_request_new(void (*cb)(struct evhttp_request *, void *), void *arg);
struct evbuffer *evhttp_request_get_output_buffer(struct evhttp_request *req);
int evhttp_make_request(struct evhttp_connection *evcon, struct evhttp_request *req, unsigned int type,
                        const char *uri);
int evhttp_request_get_response_code(const struct evhttp_request *req);

struct evbuffer *evbuffer_new(void);
void evbuffer_free(struct evbuffer *buf);
int evbuffer_add(struct evbuffer *buf, const void *data, size_t datlen);
size_t evbuffer_get_length(const struct evbuffer *buf);
ssize_t evbuffer_copyout(struct evbuffer *buf, void *data_out, size_t datlen);
int evbuffer_drain(struct evbuffer *buf, size_t len);

struct bufferevent *bufferevent_socket_new(struct event_base *base, int fd, int options);
void bufferevent_setcb(struct bufferevent *bufev, void (*readcb)(struct bufferevent *, void *),
                       void (*writecb)(struct bufferevent *, void *),
                       void (*eventcb)(struct bufferevent *, short, void *), void *cbarg);
void bufferevent_getcb(struct bufferevent *bufev, void (**readcb_ptr)(struct bufferevent *, void *),
                       void (**writecb_ptr)(struct bufferevent *, void *),
                       void (**eventcb_ptr)(struct bufferevent *, short, void *), void **cbarg_ptr);
int bufferevent_enable(struct bufferevent *bufev, short event);
int bufferevent_disable(struct bufferevent *bufev, short event);
struct evbuffer *bufferevent_get_input(struct bufferevent *bufev);
struct evbuffer *bufferevent_get_output(struct bufferevent *bufev);
int bufferevent_write(struct bufferevent *bufev, const void *data, size_t size);
int bufferevent_set_timeouts(struct bufferevent *bufev, const struct timeval *timeout_read,
                             const struct timeval *timeout_write);
void bufferevent_setwatermark(struct bufferevent *bufev, short events, size_t lowmark, size_t highmark);
int bufferevent_getfd(struct bufferevent *bufev);
void bufferevent_incref(struct bufferevent *bufev);
int bufferevent_decref(struct bufferevent *bufev);

void evconnlistener_set_error_cb(struct evconnlistener *lev, void (*errorcb)(struct evconnlistener *, void *));
int evconnlistener_enable(struct evconnlistener *lev);
int evconnlistener_disable(struct evconnlistener *lev);

#endif
