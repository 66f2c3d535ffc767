// Where the compile cache lives when the user does not say.
#pragma once

#include <string>

namespace ipu::cache {

// $IPUCC_CACHE_DIR if set and non-empty; else $XDG_CACHE_HOME/ipucc (only if absolute, as the XDG
// spec says relative values are invalid); else $HOME/.cache/ipucc; else "./.ipucc-cache".
std::string default_cache_dir();

} // namespace ipu::cache
