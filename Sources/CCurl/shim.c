// Typed wrappers over libcurl. libcurl's own prototypes are declared here by
// hand (no curl.h needed) using the ABI types: enums are int, handles are opaque.
#include "CCurl.h"

struct curl_waitfd;

extern int curl_global_init(long flags);
extern const char *curl_easy_strerror(int code);
extern char *curl_version(void);
extern ccurl_easy *curl_easy_init(void);
extern void curl_easy_cleanup(ccurl_easy *handle);
extern int curl_easy_setopt(ccurl_easy *handle, int option, ...);
extern int curl_easy_getinfo(ccurl_easy *handle, int info, ...);
extern int curl_easy_pause(ccurl_easy *handle, int bitmask);
extern ccurl_slist *curl_slist_append(ccurl_slist *list, const char *string);
extern void curl_slist_free_all(ccurl_slist *list);
extern ccurl_share *curl_share_init(void);
extern int curl_share_setopt(ccurl_share *share, int option, ...);
extern int curl_share_cleanup(ccurl_share *share);
extern ccurl_multi *curl_multi_init(void);
extern int curl_multi_cleanup(ccurl_multi *multi);
extern int curl_multi_setopt(ccurl_multi *multi, int option, ...);
extern int curl_multi_add_handle(ccurl_multi *multi, ccurl_easy *handle);
extern int curl_multi_remove_handle(ccurl_multi *multi, ccurl_easy *handle);
extern int curl_multi_perform(ccurl_multi *multi, int *running_handles);
extern int curl_multi_poll(ccurl_multi *multi, struct curl_waitfd *extra_fds, unsigned int extra_nfds,
                           int timeout_ms, int *numfds);
extern int curl_multi_wakeup(ccurl_multi *multi);
extern ccurl_msg *curl_multi_info_read(ccurl_multi *multi, int *msgs_in_queue);
extern const char *curl_multi_strerror(int code);

int ccurl_global_init(void) { return curl_global_init(CCURL_GLOBAL_ALL); }
const char *ccurl_easy_strerror(int code) { return curl_easy_strerror(code); }
const char *ccurl_version(void) { return curl_version(); }

ccurl_easy *ccurl_easy_init(void) { return curl_easy_init(); }
void ccurl_easy_cleanup(ccurl_easy *handle) { curl_easy_cleanup(handle); }

int ccurl_easy_setopt_long(ccurl_easy *handle, int option, long value) {
  return curl_easy_setopt(handle, option, value);
}
int ccurl_easy_setopt_pointer(ccurl_easy *handle, int option, const void *value) {
  return curl_easy_setopt(handle, option, value);
}
int ccurl_easy_setopt_off(ccurl_easy *handle, int option, int64_t value) {
  return curl_easy_setopt(handle, option, (long long)value);
}
int ccurl_easy_setopt_callback(ccurl_easy *handle, int option, ccurl_data_callback callback) {
  return curl_easy_setopt(handle, option, callback);
}

int ccurl_easy_setopt_sshkey_callback(ccurl_easy *handle, ccurl_sshkey_callback callback) {
  return curl_easy_setopt(handle, CCURLOPT_SSH_KEYFUNCTION, callback);
}

int ccurl_easy_getinfo_long(ccurl_easy *handle, int info, long *value) {
  return curl_easy_getinfo(handle, info, value);
}
int ccurl_easy_getinfo_string(ccurl_easy *handle, int info, const char **value) {
  return curl_easy_getinfo(handle, info, value);
}
int ccurl_easy_getinfo_off(ccurl_easy *handle, int info, int64_t *value) {
  long long v = 0;
  int rc = curl_easy_getinfo(handle, info, &v);
  *value = (int64_t)v;
  return rc;
}

int ccurl_easy_pause(ccurl_easy *handle, int bitmask) { return curl_easy_pause(handle, bitmask); }

ccurl_slist *ccurl_slist_append(ccurl_slist *list, const char *string) {
  return curl_slist_append(list, string);
}
void ccurl_slist_free_all(ccurl_slist *list) { curl_slist_free_all(list); }

ccurl_share *ccurl_share_init(void) { return curl_share_init(); }
int ccurl_share_data(ccurl_share *share, int data) { return curl_share_setopt(share, CCURLSHOPT_SHARE, data); }
int ccurl_share_cleanup(ccurl_share *share) { return curl_share_cleanup(share); }

ccurl_multi *ccurl_multi_init(void) { return curl_multi_init(); }
int ccurl_multi_cleanup(ccurl_multi *multi) { return curl_multi_cleanup(multi); }
int ccurl_multi_setopt_long(ccurl_multi *multi, int option, long value) {
  return curl_multi_setopt(multi, option, value);
}
int ccurl_multi_add_handle(ccurl_multi *multi, ccurl_easy *handle) {
  return curl_multi_add_handle(multi, handle);
}
int ccurl_multi_remove_handle(ccurl_multi *multi, ccurl_easy *handle) {
  return curl_multi_remove_handle(multi, handle);
}
int ccurl_multi_perform(ccurl_multi *multi, int *running_handles) {
  return curl_multi_perform(multi, running_handles);
}
int ccurl_multi_poll(ccurl_multi *multi, int timeout_ms, int *numfds) {
  return curl_multi_poll(multi, 0, 0, timeout_ms, numfds);
}
int ccurl_multi_wakeup(ccurl_multi *multi) { return curl_multi_wakeup(multi); }
ccurl_msg *ccurl_multi_info_read(ccurl_multi *multi, int *msgs_in_queue) {
  return curl_multi_info_read(multi, msgs_in_queue);
}
const char *ccurl_multi_strerror(int code) { return curl_multi_strerror(code); }
