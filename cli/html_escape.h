// Text from a user's model (tensor, node and compute set names, messages naming them) made safe
// to place in the HTML the tools write.
#pragma once

#include <string>
#include <string_view>

namespace ipu::cli {

// `text` as HTML character data or a quoted attribute value: '&', '<', '>', '"' and '\'' become
// entities, and control characters (but newlines) and bytes that are not well-formed UTF-8
// become \xNN as in printable_message, so the page stays valid UTF-8 and shows every byte.
std::string html_escape(std::string_view text);

} // namespace ipu::cli
