#ifndef MOCKCLOUD_CCURL_SHIM_H
#define MOCKCLOUD_CCURL_SHIM_H

// libcurl for the client: CurlTransport, and the trust store check of
// URLSessionTransport on Linux. curl_easy_setopt and curl_easy_getinfo are
// variadic, which Swift cannot call: one typed wrapper per argument type. The type-checking macros are for C callers only.
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

// A string libcurl holds (CURLINFO_CAINFO, CURLINFO_CAPATH: the trust store
// it was built to read); NULL when it has none.
static inline CURLcode mockcloud_curl_info_string(CURL *handle, CURLINFO info, const char **value) {
    return curl_easy_getinfo(handle, info, value);
}

// The result of `easy`'s finished transfer on `multi`; 0 when it has none
// yet. CURLMsg's result sits in a union, read here in C.
static inline int mockcloud_curl_multi_result(CURLM *multi, CURL *easy, CURLcode *result) {
    int left = 0;
    CURLMsg *message;
    while ((message = curl_multi_info_read(multi, &left))) {
        if (message->msg == CURLMSG_DONE && message->easy_handle == easy) {
            *result = message->data.result;
            return 1;
        }
    }
    return 0;
}

#endif
