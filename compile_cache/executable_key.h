// Which cache entry an executable belongs to. Every executable records the manifest it was
// compiled from (Executable.manifest, docs/executable_format.md) and the digest of the weight
// values it holds, which is not a key input (docs/cache.md, "Weights are not in the key"). The
// SHA-256 of the recorded manifest is the key it belongs under; an entry is used only if that is
// the key it was found under, so one entry's executable copied over another's, locally or on a
// remote server, is refused instead of run as the other model (docs/cache.md, "Writes and
// reads").
#pragma once

#include <string>
#include <string_view>

#include "cache/manifest.h"
#include "runtime/base/status.h"
#include "runtime/format/executable.pb.h"

namespace ipu::compile_cache {

// The name under which an executable records the digest of its weight values.
inline constexpr const char* kWeightsField = "weights_sha256";

// What an executable records: Executable.manifest, which its summary carries too
// (ExecutableSummary.manifest), so a cache hit checks the key without reading the payload.
using RecordedManifest = google::protobuf::RepeatedPtrField<format::ManifestEntry>;

// The recorded manifest without the weights digest. DataLoss naming `origin` if a name appears
// twice.
StatusOr<cache::Manifest> recorded_manifest(const RecordedManifest& recorded, const std::string& origin);

// The recorded weights digest; "" if there is none.
std::string recorded_weights(const RecordedManifest& recorded);

// OK if the executable records exactly `expected`, so it belongs under expected.key(). Otherwise
// DataLoss naming `origin`, the key the executable belongs under and the first manifest field that
// differs.
Status check_executable_key(const RecordedManifest& recorded, const cache::Manifest& expected,
                            const std::string& origin);

// check_executable_key, then the checks ipurun makes before it runs an executable
// (verify_executable, verify_host_contract; docs/executable_format.md): an entry a hit uses, a
// remote fetch stores or `cache verify` passes is one that runs. A writer of the cache can frame
// any message under a key's recorded manifest, so belonging to the key is not enough.
Status check_cache_entry(const format::Executable& exe, const cache::Manifest& expected,
                         const std::string& origin);

// The executable of an entry fetched from a remote cache for `expected`, if it may be used: the
// manifest text the server sent is expected's canonical text byte for byte, and the executable
// parses and passes check_cache_entry. Otherwise an error naming `where` (the entry's URL without
// its suffix) and what is wrong. The one check of a remote answer, which tests/fuzz/
// fuzz_remote_cache.cpp feeds hostile answers through.
StatusOr<format::Executable> check_fetched_entry(std::string_view manifest_text,
                                                 std::string_view executable_bytes,
                                                 const cache::Manifest& expected, const std::string& where);

} // namespace ipu::compile_cache
