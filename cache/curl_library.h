// libcurl, loaded when the first remote-cache request needs it. Linked directly, libcurl and the
// two dozen libraries it pulls in (TLS, Kerberos, LDAP, IDN, ...) cost every ipucc start several
// milliseconds of dynamic loading, a fifth of a cache hit's budget, although only a remote cache
// speaks HTTP. Loading it on demand keeps local hits fast, and lets ipucc run where libcurl is not
// installed (the remote cache then warns and falls back, like any other remote failure).
#pragma once

#include <curl/curl.h>

#include "runtime/base/status.h"

namespace ipu::cache {

// The entry points the remote store uses, with libcurl's own signatures.
struct CurlLibrary {
  decltype(&curl_global_init) global_init;
  decltype(&curl_easy_init) easy_init;
  decltype(&curl_easy_cleanup) easy_cleanup;
  decltype(&curl_easy_setopt) easy_setopt;
  decltype(&curl_easy_perform) easy_perform;
  decltype(&curl_easy_getinfo) easy_getinfo;
  decltype(&curl_easy_strerror) easy_strerror;
  decltype(&curl_slist_append) slist_append;
  decltype(&curl_slist_free_all) slist_free_all;
};

// Loads libcurl.so.4 and runs curl_global_init once per process (thread-safe). IoError naming the
// library and the loader's reason if it cannot be loaded or initialised; the answer is kept.
StatusOr<const CurlLibrary*> curl_library();

} // namespace ipu::cache
