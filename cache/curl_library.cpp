#include "cache/curl_library.h"

#include <dlfcn.h>

#include <string>

namespace ipu::cache {
namespace {

// The soname of libcurl's ABI 4, which every libcurl since 7.16 keeps.
constexpr const char* kLibcurl = "libcurl.so.4";

template <typename Function> bool resolve(void* handle, const char* name, Function& out) {
  out = reinterpret_cast<Function>(dlsym(handle, name));
  return out != nullptr;
}

StatusOr<CurlLibrary> load() {
  // Never unloaded: handles and callbacks may be live until exit.
  void* handle = dlopen(kLibcurl, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return io_error(std::string("cannot load ") + kLibcurl + ": " + dlerror());
  CurlLibrary lib{};
  const bool complete = resolve(handle, "curl_global_init", lib.global_init) &&
                        resolve(handle, "curl_easy_init", lib.easy_init) &&
                        resolve(handle, "curl_easy_cleanup", lib.easy_cleanup) &&
                        resolve(handle, "curl_easy_setopt", lib.easy_setopt) &&
                        resolve(handle, "curl_easy_perform", lib.easy_perform) &&
                        resolve(handle, "curl_easy_getinfo", lib.easy_getinfo) &&
                        resolve(handle, "curl_easy_strerror", lib.easy_strerror) &&
                        resolve(handle, "curl_slist_append", lib.slist_append) &&
                        resolve(handle, "curl_slist_free_all", lib.slist_free_all);
  if (!complete) return io_error(std::string(kLibcurl) + ": " + dlerror());
  if (lib.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    return io_error(std::string(kLibcurl) + ": curl_global_init failed");
  }
  return lib;
}

} // namespace

StatusOr<const CurlLibrary*> curl_library() {
  static const StatusOr<CurlLibrary> loaded = load();
  if (!loaded.ok()) return loaded.status();
  return &*loaded;
}

} // namespace ipu::cache
