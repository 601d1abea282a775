// "-" as stdin for every input a front end reads: all of stdin, read once per process
// (a second reader is refused by name), within the memory limit; an array's format sniffed
// by parse_array_bytes (NPY or JSON).
#pragma once

#include "attn/io/array.hpp"

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace attn::io {

/// All of `stream`'s bytes. `what` names the argument that asked, for errors: InputError
/// "WHAT: <stdin>: more than the memory limit of SIZE (--max-memory)" past memory_limit(),
/// "WHAT: <stdin>: cannot read: REASON" when a read fails.
std::vector<std::uint8_t> read_stream(std::FILE* stream, std::string_view what);

/// All of stdin (read_stream). stdin can be consumed once per process: a second call
/// throws InputError "WHAT: stdin (-) is already read by FIRST; only one input can be -".
std::vector<std::uint8_t> read_stdin(std::string_view what);

/// read_array_file, except that "-" reads stdin (format sniffed, see parse_array_bytes).
/// Throws InputError naming the file ("<stdin>" for -).
Array read_array_arg(const std::string& path, ArrayKind kind);

} // namespace attn::io
