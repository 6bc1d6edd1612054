// CCrypto: incremental message digests through OpenSSL libcrypto's EVP API.
// Why a shim: EVP_MD_CTX is opaque and some EVP "functions" are macros that Swift cannot import.
#ifndef HAUL_CCRYPTO_H
#define HAUL_CCRYPTO_H

#include <stddef.h>

typedef struct ccrypto_digest ccrypto_digest;

/// Starts a digest by OpenSSL name ("SHA256", "SHA512", "SHA1", "MD5"); NULL if unknown.
ccrypto_digest *ccrypto_digest_new(const char *name);
/// Feeds bytes; returns 1 on success.
int ccrypto_digest_update(ccrypto_digest *digest, const void *bytes, size_t count);
/// Writes the digest into out (at least 64 bytes) and returns its length, 0 on failure; the digest can then only be freed.
size_t ccrypto_digest_final(ccrypto_digest *digest, unsigned char *out);
/// A copy holding the same state, so a running hash can be read without ending it; NULL on failure.
ccrypto_digest *ccrypto_digest_copy(const ccrypto_digest *digest);
void ccrypto_digest_free(ccrypto_digest *digest);
/// OpenSSL's version text ("OpenSSL 3.0.19 …"), for `haul --version`.
const char *ccrypto_version(void);

#endif
