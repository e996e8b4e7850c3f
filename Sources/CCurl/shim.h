#ifndef MOCKCLOUD_CCURL_SHIM_H
#define MOCKCLOUD_CCURL_SHIM_H

// libcurl for the client's CurlTransport alone. curl_easy_setopt and
// curl_easy_getinfo are variadic, which Swift cannot call: one typed wrapper
// per argument type. The type-checking macros are for C callers only.
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

static inline CURLcode mockcloud_curl_set_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode mockcloud_curl_set_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode mockcloud_curl_set_pointer(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode mockcloud_curl_set_write(CURL *handle, CURLoption option, curl_write_callback value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode mockcloud_curl_response_code(CURL *handle, long *code) {
    return curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, code);
}

#endif
