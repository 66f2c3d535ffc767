// printable / printable_message (runtime/base/printable.h): names from models print as what they
// are, whatever bytes they hold.
#include <doctest/doctest.h>

#include <string>

#include "runtime/base/printable.h"

namespace {

using namespace std::string_literals;
using ipu::is_valid_utf8;
using ipu::printable;
using ipu::printable_message;

TEST_CASE("printable escapes control characters, quotes and backslashes, and keeps the rest") {
  CHECK(printable("dense1/kernel") == "dense1/kernel");
  CHECK(printable("a\0b"s) == "a\\x00b"); // a NUL no longer ends the text
  CHECK(printable("line\nbreak") == "line\\x0abreak");
  CHECK(printable("\x1b[31mred") == "\\x1b[31mred");
  CHECK(printable("del\x7f") == "del\\x7f");
  CHECK(printable("it's") == "it\\'s");
  CHECK(printable("a\\x00b") == "a\\\\x00b"); // the text "\x00" reads back differently from a NUL
  CHECK(printable("") == "");
}

TEST_CASE("printable keeps UTF-8 letters and escapes bytes that are not UTF-8") {
  CHECK(printable("gewicht_\xc3\xa4") == "gewicht_\xc3\xa4");                 // ä
  CHECK(printable("\xe6\x9d\x83\xe9\x87\x8d") == "\xe6\x9d\x83\xe9\x87\x8d"); // 权重
  CHECK(printable("\xf0\x9f\x98\x80") == "\xf0\x9f\x98\x80");                 // U+1F600
  CHECK(printable("a\xff") == "a\\xff");
  CHECK(printable("\xc3") == "\\xc3");                            // cut short
  CHECK(printable("\xc0\x80") == "\\xc0\\x80");                   // overlong NUL
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");          // a surrogate
  CHECK(printable("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80"); // past U+10FFFF
  CHECK(printable("\xc2\x9b"
                  "2J") == "\\xc2\\x9b"
                           "2J"); // C1 control CSI
}

TEST_CASE("printable_message keeps newlines and the message's own quoting") {
  CHECK(printable_message("a.onnx: node 'n' (Relu)\nb.onnx: x") == "a.onnx: node 'n' (Relu)\nb.onnx: x");
  CHECK(printable_message("weight 'x\0y/kernel'"s) == "weight 'x\\x00y/kernel'");
  CHECK(printable_message("tab\there\r") == "tab\\x09here\\x0d");
  CHECK(printable_message("C:\\path") == "C:\\path");
}

TEST_CASE("is_valid_utf8 follows Unicode's well-formed sequences") {
  CHECK(is_valid_utf8(""));
  CHECK(is_valid_utf8("ascii/only"));
  CHECK(is_valid_utf8("a\0b"s));
  CHECK(is_valid_utf8("\xc3\xa4\xe6\x9d\x83\xf0\x9f\x98\x80"));
  CHECK_FALSE(is_valid_utf8("\xff"));
  CHECK_FALSE(is_valid_utf8("\xc3"));
  CHECK_FALSE(is_valid_utf8("\xc0\x80"));
  CHECK_FALSE(is_valid_utf8("\xed\xa0\x80"));
  CHECK_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));
}

} // namespace
