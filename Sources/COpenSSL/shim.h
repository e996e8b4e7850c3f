#ifndef MOCKCLOUD_COPENSSL_SHIM_H
#define MOCKCLOUD_COPENSSL_SHIM_H

// Only what MockCloudStore's HMACSHA256 and SHA256Stream use. HMAC-SHA256 is built on the SHA-256 primitives:
// OpenSSL 3 marks them deprecated in favour of EVP, whose first use costs
// about a millisecond of provider loading in every CGI process, so the
// deprecation attributes are switched off for this header alone.
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/sha.h>
#include <openssl/crypto.h>

#endif
