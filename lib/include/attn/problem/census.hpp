// A head census (`attn census MODEL TEXTS`): every layer's and head's statistics
// (attn/problem/head_stats.hpp) pooled over a corpus and induction probes, as sums and
// qualifying rows, so partial censuses merge exactly. The files it is written as and read
// back from are census_files.cpp's. Does not: read the texts (census_texts), print.
#pragma once

#include "attn/problem/census_texts.hpp"
#include "attn/problem/head_stats.hpp"
#include "attn/problem/solve.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn::problem {

/// `--probe induction:N:R`: N random vocabulary ids (special tokens excluded) repeated R
/// times (Olsson et al. 2022).
struct InductionProbe {
    std::size_t length = 0;
    std::size_t repeats = 0;
};

/// "induction:N:R" (N >= 1, R >= 2). Throws InputError naming the field "probe".
InductionProbe parse_probe(std::string_view spec);

/// Pooled statistics, [layers · H] each (C order).
struct Census {
    std::size_t layers = 0, heads = 0;
    std::array<std::vector<double>, kHeadStats> sum;
    std::array<std::vector<std::int64_t>, kHeadStats> rows;
    double sink_threshold = 0.3;

    /// Statistic `stat`'s pooled mean at (layer, head) cell x: sum / rows, NaN without rows.
    double mean(std::size_t stat, std::size_t x) const;
    /// Whether cell x is an attention sink: its first_token mean >= sink_threshold.
    bool sink(std::size_t x) const;
    /// Adds another census's sums and rows (the same layers, heads and threshold, else
    /// InputError naming `what`).
    void add(const Census& other, std::string_view what);
};

struct CensusRequest {
    std::string params;         ///< the model, as "params" names it
    std::filesystem::path base; ///< what relative paths are relative to
    std::vector<CensusText> texts;
    std::string texts_name; ///< for messages: the TEXTS file, or "stdin"
    std::optional<InductionProbe> probe;
    std::size_t probes = 1;
    std::uint64_t seed = 0;
    double sink_threshold = 0.3;
    SolveOptions solve;
    /// Texts run at once (--jobs); the census is the same for any count.
    unsigned jobs = 1;
    /// Called as texts are done (done, total), from the calling thread; may be empty.
    std::function<void(std::size_t, std::size_t)> progress;
    /// Called with each text's index (texts, then probes) and its statistics, in input
    /// order, from the calling thread (what census_view's best texts are found from); may
    /// be empty.
    std::function<void(std::size_t, const std::vector<HeadStatTotals>&)> on_text;
};

/// Per statistic and (layer, head) cell: the text where that head's statistic (its mean
/// over the text's qualifying rows, batch rows pooled) was highest, -1 where no text has a
/// qualifying row; ties go to the first text in input order.
struct CensusBest {
    std::size_t layers = 0, heads = 0;
    std::array<std::vector<std::int64_t>, kHeadStats> text;
    std::array<std::vector<double>, kHeadStats> value;

    /// Text `index`'s statistics (what CensusRequest::on_text hands over), in input order.
    void add(std::size_t index, const std::vector<HeadStatTotals>& layers_of_text);
};

/// The probes' token ids: `count` sequences, each `probe.length` ids drawn uniformly from
/// [0, vocabulary) minus `special` with a seeded generator (splitmix64: the same ids on
/// every platform), repeated probe.repeats times.
std::vector<std::vector<std::int64_t>> probe_sequences(const InductionProbe& probe,
                                                       std::size_t count,
                                                       std::uint64_t seed,
                                                       std::size_t vocabulary,
                                                       const std::vector<std::int64_t>& special);

/// The request's probes' token ids (none without a probe): probe_sequences() drawn from
/// the model's vocabulary minus the ids its tokenizer adds around every text.
std::vector<std::vector<std::int64_t>> census_probes(const CensusRequest& request);

/// Text `index` of a census as a model run's input: {"text": ...} or {"token_ids": [...]}
/// for TEXTS, then {"token_ids": probe} for the probes; `where` is set to its name in
/// messages ("FILE: line 3: ", "probe 0: ").
nlohmann::json census_input(const CensusRequest& request,
                            const std::vector<std::vector<std::int64_t>>& probes,
                            std::size_t index,
                            std::string& where);

/// Runs the model on every text and probe with "return": ["head_stats"] and no weights
/// kept, `jobs` texts at a time, and pools the statistics in input order. A bad text is an
/// InputError naming its line (the first in input order).
Census run_census(const CensusRequest& request);

} // namespace attn::problem
