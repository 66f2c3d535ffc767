// The names the tools put before their messages ("ipucc: error: ...") and write as the "tool" of
// every JSON document (docs/json.md).
#pragma once

namespace ipu::cli {

inline constexpr const char* kIpuccTool = "ipucc";
inline constexpr const char* kIpurunTool = "ipurun";

} // namespace ipu::cli
