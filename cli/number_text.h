// Counts as the reports and summaries print them: digits grouped in threes by commas, so a cycle
// count of 1234567 reads 1,234,567.
#pragma once

#include <cstdint>
#include <string>

namespace ipu::cli {

std::string with_commas(uint64_t n);

// `value` rounded to a whole number (as printf's %.0f rounds), with a leading '-' when it is
// negative: rounded_with_commas(-1234.4) == "-1,234".
std::string rounded_with_commas(double value);

} // namespace ipu::cli
