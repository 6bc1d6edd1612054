// CCurl: the subset of libcurl's stable public ABI that Haul uses.
//
// Why this exists: libcurl.so.4 is present wherever FoundationNetworking runs,
// but its headers usually are not, and `swift build` must work without them.
// Every name here is prefixed `ccurl_`/`CCURL` so it never clashes with curl.h;
// abi_check.c proves each value and layout equal to curl.h's wherever curl.h
// is installed (CI installs libcurl4-openssl-dev).
#ifndef HAUL_CCURL_H
#define HAUL_CCURL_H

#include <stddef.h>
#include <stdint.h>

/// Opaque libcurl handles.
typedef struct ccurl_easy ccurl_easy;
typedef struct ccurl_multi ccurl_multi;
typedef struct ccurl_share ccurl_share;

/// A `struct curl_slist` (header lists); the layout is part of the ABI.
typedef struct ccurl_slist {
  char *data;
  struct ccurl_slist *next;
} ccurl_slist;

/// `CURLMsg`: what curl_multi_info_read returns; only `done` messages exist.
typedef struct ccurl_msg {
  int msg;
  ccurl_easy *easy_handle;
  union {
    void *whatever;
    int result;
  } data;
} ccurl_msg;

/// Write and header callbacks: (bytes, 1, count, user data) -> bytes taken.
typedef size_t (*ccurl_data_callback)(char *ptr, size_t size, size_t nmemb, void *userdata);

// MARK: - Constants (values are libcurl's; abi_check.c asserts them)

enum {
  CCURL_GLOBAL_ALL = 3,
  CCURLMSG_DONE = 1,
  CCURL_ERROR_SIZE = 256,
  /// Returned by a write callback: keep this chunk and stop receiving until unpaused.
  CCURL_WRITEFUNC_PAUSE = 0x10000001,
  CCURLPAUSE_CONT = 0,
  /// Stops reading; unpausing after it makes libcurl read once (see CurlTransfer.readIfIdle).
  CCURLPAUSE_RECV = 1,
};

/// CURLoption values used by Haul.
enum {
  CCURLOPT_WRITEDATA = 10001,
  CCURLOPT_URL = 10002,
  CCURLOPT_ERRORBUFFER = 10010,
  CCURLOPT_WRITEFUNCTION = 20011,
  CCURLOPT_LOW_SPEED_LIMIT = 19,
  CCURLOPT_LOW_SPEED_TIME = 20,
  CCURLOPT_USERAGENT = 10018,
  CCURLOPT_HTTPHEADER = 10023,
  CCURLOPT_HEADERDATA = 10029,
  CCURLOPT_VERBOSE = 41,
  CCURLOPT_FOLLOWLOCATION = 52,
  CCURLOPT_SSL_VERIFYPEER = 64,
  CCURLOPT_MAXREDIRS = 68,
  CCURLOPT_CONNECTTIMEOUT = 78,
  CCURLOPT_HEADERFUNCTION = 20079,
  CCURLOPT_HTTPGET = 80,
  CCURLOPT_SSL_VERIFYHOST = 81,
  CCURLOPT_BUFFERSIZE = 98,
  CCURLOPT_NOSIGNAL = 99,
  CCURLOPT_PRIVATE = 10103,
  CCURLOPT_MAX_RECV_SPEED_LARGE = 30146,
  CCURLOPT_TCP_KEEPALIVE = 213,
  CCURLOPT_PROTOCOLS_STR = 10318,
  CCURLOPT_REDIR_PROTOCOLS_STR = 10319,
  // Trust and identity (--cacert, --capath, --cert, --key): file paths libcurl hands to OpenSSL.
  CCURLOPT_CAINFO = 10065,
  CCURLOPT_CAPATH = 10097,
  CCURLOPT_SSLCERT = 10025,
  CCURLOPT_SSLKEY = 10087,
  // Credentials (-u, --netrc, --netrc-file): libcurl sends them, never Haul's own headers.
  CCURLOPT_USERNAME = 10173,
  CCURLOPT_PASSWORD = 10174,
  CCURLOPT_NETRC = 51,
  CCURLOPT_NETRC_FILE = 10118,
  // -e and cookies (-b STRING, -b FILE, -c FILE): libcurl's own cookie engine.
  CCURLOPT_REFERER = 10016,
  CCURLOPT_COOKIE = 10022,
  CCURLOPT_COOKIEFILE = 10031,
  CCURLOPT_COOKIEJAR = 10082,
  CCURLOPT_COOKIELIST = 10135,  // "FLUSH": write the jar now, not at the handle's cleanup
  CCURLOPT_SHARE = 10100,       // one cookie store for every transfer of a cookie configuration
  // --proxy, --noproxy (the *_proxy environment variables libcurl reads itself).
  CCURLOPT_PROXY = 10004,
  CCURLOPT_NOPROXY = 10177,
  // -4/-6 and --resolve HOST:PORT:ADDR (a list).
  CCURLOPT_IPRESOLVE = 113,
  CCURLOPT_RESOLVE = 10203,
  // -N: If-Modified-Since from a local file's time; the answer says whether the condition failed.
  CCURLOPT_TIMECONDITION = 33,
  CCURLOPT_TIMEVALUE_LARGE = 30270,
  // FTP: the server's modification time (MDTM) and a byte range (REST, or RETR of a part).
  CCURLOPT_FILETIME = 69,
  CCURLOPT_RANGE = 10007,
  // SFTP: the known_hosts file checked (with a callback that says why a key is refused) and the
  // key pair to log in with (curl's --key and --pubkey).
  CCURLOPT_SSH_KNOWNHOSTS = 10183,
  CCURLOPT_SSH_KEYFUNCTION = 20184,
  CCURLOPT_SSH_KEYDATA = 10185,
  CCURLOPT_SSH_PRIVATE_KEYFILE = 10153,
  CCURLOPT_SSH_PUBLIC_KEYFILE = 10152,
  // SFTP: which ways to log in libcurl may try (all but ssh-agent when no agent answers).
  CCURLOPT_SSH_AUTH_TYPES = 151,
};

/// Bits of CCURLOPT_SSH_AUTH_TYPES.
enum {
  CCURLSSH_AUTH_ANY = ~0,
  CCURLSSH_AUTH_AGENT = 1 << 4,
};

/// Values of CCURLOPT_NETRC, CCURLOPT_IPRESOLVE and CCURLOPT_TIMECONDITION.
enum {
  CCURL_NETRC_OPTIONAL = 1,
  CCURL_IPRESOLVE_WHATEVER = 0,
  CCURL_IPRESOLVE_V4 = 1,
  CCURL_IPRESOLVE_V6 = 2,
  CCURL_TIMECOND_IFMODSINCE = 1,
};

/// What the known_hosts check found (`enum curl_khmatch`), what the key callback answers
/// (`enum curl_khstat`), and the host key's type (`enum curl_khtype`).
enum {
  CCURLKHMATCH_OK = 0,
  CCURLKHMATCH_MISMATCH = 1,
  CCURLKHMATCH_MISSING = 2,
  CCURLKHSTAT_FINE = 1,
  CCURLKHSTAT_REJECT = 2,
  CCURLKHTYPE_RSA1 = 1,
  CCURLKHTYPE_RSA = 2,
  CCURLKHTYPE_DSS = 3,
  CCURLKHTYPE_ECDSA = 4,
  CCURLKHTYPE_ED25519 = 5,
};

/// `struct curl_khkey`: a host key, raw bytes when `len` > 0 (else a base64 C string).
typedef struct ccurl_khkey {
  const char *key;
  size_t len;
  int keytype;
} ccurl_khkey;

/// CURLOPT_SSH_KEYFUNCTION: (handle, known key or NULL, the server's key, match, user data)
/// -> a CCURLKHSTAT value.
typedef int (*ccurl_sshkey_callback)(ccurl_easy *easy, const ccurl_khkey *knownkey,
                                     const ccurl_khkey *foundkey, int match, void *clientp);

/// CURLINFO values used by Haul.
enum {
  CCURLINFO_EFFECTIVE_URL = 0x100000 + 1,
  CCURLINFO_RESPONSE_CODE = 0x200000 + 2,
  CCURLINFO_REDIRECT_COUNT = 0x200000 + 20,
  CCURLINFO_OS_ERRNO = 0x200000 + 25,
  CCURLINFO_SIZE_DOWNLOAD_T = 0x600000 + 8,
  /// FTP: the size the server reported (SIZE), -1 when unknown.
  CCURLINFO_CONTENT_LENGTH_DOWNLOAD_T = 0x600000 + 15,
  /// FTP: the modification time the server reported (MDTM) as Unix seconds, -1 when unknown.
  CCURLINFO_FILETIME_T = 0x600000 + 14,
  /// 1 when a CCURLOPT_TIMECONDITION was not met (the server's copy is not newer).
  CCURLINFO_CONDITION_UNMET = 0x200000 + 35,
};

/// CURLSHoption and curl_lock_data values: a share that holds cookies.
enum {
  CCURLSHOPT_SHARE = 1,
  CCURL_LOCK_DATA_COOKIE = 2,
  CCURLSHE_OK = 0,
};

/// CURLMoption values used by Haul.
enum {
  CCURLMOPT_MAXCONNECTS = 6,
  CCURLMOPT_MAX_HOST_CONNECTIONS = 7,
};

/// CURLMcode values Haul tells apart.
enum {
  CCURLM_OK = 0,
};

/// CURLcode values Haul tells apart; any other non-zero code is a generic failure.
enum {
  CCURLE_OK = 0,
  CCURLE_UNSUPPORTED_PROTOCOL = 1,
  CCURLE_URL_MALFORMAT = 3,
  CCURLE_COULDNT_RESOLVE_PROXY = 5,
  CCURLE_COULDNT_RESOLVE_HOST = 6,
  CCURLE_COULDNT_CONNECT = 7,
  CCURLE_WEIRD_SERVER_REPLY = 8,
  CCURLE_HTTP2 = 16,
  CCURLE_PARTIAL_FILE = 18,
  CCURLE_WRITE_ERROR = 23,
  CCURLE_OUT_OF_MEMORY = 27,
  CCURLE_OPERATION_TIMEDOUT = 28,
  CCURLE_SSL_CONNECT_ERROR = 35,
  CCURLE_ABORTED_BY_CALLBACK = 42,
  CCURLE_TOO_MANY_REDIRECTS = 47,
  CCURLE_GOT_NOTHING = 52,
  CCURLE_SEND_ERROR = 55,
  CCURLE_RECV_ERROR = 56,
  CCURLE_SSL_CERTPROBLEM = 58,
  CCURLE_PEER_FAILED_VERIFICATION = 60,
  CCURLE_BAD_CONTENT_ENCODING = 61,
  CCURLE_SSL_CACERT_BADFILE = 77,
  CCURLE_HTTP2_STREAM = 92,
  // FTP answers: the file is missing, the login or the file was refused, a resume past the end.
  CCURLE_REMOTE_ACCESS_DENIED = 9,
  CCURLE_FTP_COULDNT_RETR_FILE = 19,
  CCURLE_BAD_DOWNLOAD_RESUME = 36,
  CCURLE_LOGIN_DENIED = 67,
  /// The transfer would pass CURLOPT_MAXFILESIZE (Haul checks the size itself and reports it so).
  CCURLE_FILESIZE_EXCEEDED = 63,
  CCURLE_REMOTE_FILE_NOT_FOUND = 78,
};

// MARK: - Global and easy interface

/// Once per process, before any other call (curl_global_init is not thread-safe in old libcurl).
int ccurl_global_init(void);
/// Human text for a CURLcode; static storage owned by libcurl.
const char *ccurl_easy_strerror(int code);
/// libcurl's version string, for `haul --version`.
const char *ccurl_version(void);

ccurl_easy *ccurl_easy_init(void);
void ccurl_easy_cleanup(ccurl_easy *handle);

/// curl_easy_setopt is variadic; Swift cannot call it, so one typed wrapper per argument kind.
int ccurl_easy_setopt_long(ccurl_easy *handle, int option, long value);
/// For string, slist, buffer and user-data options; libcurl copies strings, not lists or buffers.
int ccurl_easy_setopt_pointer(ccurl_easy *handle, int option, const void *value);
/// For `_LARGE` options that take a curl_off_t (64-bit).
int ccurl_easy_setopt_off(ccurl_easy *handle, int option, int64_t value);
/// For CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION, keeping the function pointer typed.
int ccurl_easy_setopt_callback(ccurl_easy *handle, int option, ccurl_data_callback callback);
/// For CURLOPT_SSH_KEYFUNCTION.
int ccurl_easy_setopt_sshkey_callback(ccurl_easy *handle, ccurl_sshkey_callback callback);

/// curl_easy_getinfo is variadic too; one wrapper per result kind.
int ccurl_easy_getinfo_long(ccurl_easy *handle, int info, long *value);
int ccurl_easy_getinfo_string(ccurl_easy *handle, int info, const char **value);
int ccurl_easy_getinfo_off(ccurl_easy *handle, int info, int64_t *value);

/// Pauses receiving (CCURLPAUSE_RECV) or unpauses (CCURLPAUSE_CONT) a transfer; event thread only.
int ccurl_easy_pause(ccurl_easy *handle, int bitmask);

/// A share handle (curl_share_init); NULL when out of memory.
ccurl_share *ccurl_share_init(void);
/// curl_share_setopt(share, CURLSHOPT_SHARE, data) for one curl_lock_data value; a CURLSHcode.
/// No lock callbacks: every handle that uses a share runs on the one event thread.
int ccurl_share_data(ccurl_share *share, int data);
/// Frees a share no easy handle uses any more; a CURLSHcode (CURLSHE_IN_USE while one does).
int ccurl_share_cleanup(ccurl_share *share);

/// Header lists for CURLOPT_HTTPHEADER; append copies the string and returns the new head (NULL on failure).
ccurl_slist *ccurl_slist_append(ccurl_slist *list, const char *string);
void ccurl_slist_free_all(ccurl_slist *list);

// MARK: - Multi interface (driven by Haul's one event thread)

ccurl_multi *ccurl_multi_init(void);
int ccurl_multi_cleanup(ccurl_multi *multi);
int ccurl_multi_setopt_long(ccurl_multi *multi, int option, long value);
int ccurl_multi_add_handle(ccurl_multi *multi, ccurl_easy *handle);
int ccurl_multi_remove_handle(ccurl_multi *multi, ccurl_easy *handle);
int ccurl_multi_perform(ccurl_multi *multi, int *running_handles);
/// Waits for activity or timeout; another thread can cut the wait short with ccurl_multi_wakeup.
int ccurl_multi_poll(ccurl_multi *multi, int timeout_ms, int *numfds);
int ccurl_multi_wakeup(ccurl_multi *multi);
ccurl_msg *ccurl_multi_info_read(ccurl_multi *multi, int *msgs_in_queue);
const char *ccurl_multi_strerror(int code);

/// 1 when abi_check.c was compiled against the real curl.h (all constants proven), else 0.
int ccurl_abi_checked_against_headers(void);

#endif
