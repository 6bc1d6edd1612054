#include "CCrypto.h"
#include <openssl/crypto.h>
#include <openssl/evp.h>

struct ccrypto_digest {
  EVP_MD_CTX *context;
};

ccrypto_digest *ccrypto_digest_new(const char *name) {
  const EVP_MD *md = EVP_get_digestbyname(name);
  if (md == NULL) return NULL;
  EVP_MD_CTX *context = EVP_MD_CTX_new();
  if (context == NULL) return NULL;
  if (EVP_DigestInit_ex(context, md, NULL) != 1) {
    EVP_MD_CTX_free(context);
    return NULL;
  }
  ccrypto_digest *digest = OPENSSL_malloc(sizeof *digest);
  if (digest == NULL) {
    EVP_MD_CTX_free(context);
    return NULL;
  }
  digest->context = context;
  return digest;
}

int ccrypto_digest_update(ccrypto_digest *digest, const void *bytes, size_t count) {
  return EVP_DigestUpdate(digest->context, bytes, count);
}

size_t ccrypto_digest_final(ccrypto_digest *digest, unsigned char *out) {
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(digest->context, out, &length) != 1) return 0;
  return length;
}

ccrypto_digest *ccrypto_digest_copy(const ccrypto_digest *digest) {
  EVP_MD_CTX *context = EVP_MD_CTX_new();
  if (context == NULL) return NULL;
  if (EVP_MD_CTX_copy_ex(context, digest->context) != 1) {
    EVP_MD_CTX_free(context);
    return NULL;
  }
  ccrypto_digest *copy = OPENSSL_malloc(sizeof *copy);
  if (copy == NULL) {
    EVP_MD_CTX_free(context);
    return NULL;
  }
  copy->context = context;
  return copy;
}

void ccrypto_digest_free(ccrypto_digest *digest) {
  if (digest == NULL) return;
  EVP_MD_CTX_free(digest->context);
  OPENSSL_free(digest);
}

const char *ccrypto_version(void) { return OpenSSL_version(OPENSSL_VERSION); }
