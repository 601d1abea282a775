// A census as the files `attn census` writes (.json, .csv, .npz) and the .npz that
// `attn census merge` reads back. The file's bytes only: writing them is the caller's (the
// atomic writer). Does not: run a census (census.cpp).
#pragma once

#include "attn/problem/census.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace attn::problem {

/// {"layers": L, "heads": H, "sink_threshold": t, STAT: [[..]], STAT_sum, STAT_rows, "sink"}
/// with [layers][H] arrays; NaN as "nan". One line, no trailing newline.
std::string census_json(const Census& c);

/// Header `layer,head,STAT...,sink,STAT_rows...`, then one row per layer and head.
std::string census_csv(const Census& c);

/// np.savez's layout: STAT (float64 means), STAT_sum (float64), STAT_rows (int64), sink
/// (int64 0/1), all [layers, H], and sink_threshold ([1], float64).
std::vector<std::uint8_t> census_npz(const Census& c);

/// A census .npz as census_npz writes it, checked: every member there, of one shape, rows
/// whole numbers >= 0. Throws InputError naming the file.
Census read_census_npz(const std::filesystem::path& file);

} // namespace attn::problem
