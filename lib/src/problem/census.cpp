// The head census (attn/problem/census.hpp): each text and probe through the model with
// "return": ["head_stats"] and no weights kept, its sums and rows added to the pool in
// input order. Not here: reading the texts (census_texts.cpp), the files (census_files.cpp).
#include "attn/problem/census.hpp"

#include "attn/error.hpp"
#include "attn/io/limits.hpp"
#include "attn/model/store.hpp"
#include "attn/model/weights.hpp"
#include "attn/parallel.hpp"
#include "attn/problem/model_run.hpp"
#include "attn/text/tokenizer.hpp"
#include "decode_detail.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <limits>

namespace attn::problem {

namespace fs = std::filesystem;
using nlohmann::json;

InductionProbe parse_probe(std::string_view spec) {
    const auto bad = [&] {
        return InputError(option_name("probe") + ": expected induction:N:R (N >= 1 random ids " +
                          "repeated R >= 2 times), got '" + std::string(spec) + "'");
    };
    constexpr std::string_view kind = "induction:";
    if (spec.substr(0, kind.size()) != kind) {
        throw bad();
    }
    const std::string_view rest = spec.substr(kind.size());
    const std::size_t colon = rest.find(':');
    if (colon == std::string_view::npos) {
        throw bad();
    }
    InductionProbe p;
    const auto number = [&](std::string_view text, std::size_t& out) {
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
        if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
            throw bad();
        }
    };
    number(rest.substr(0, colon), p.length);
    number(rest.substr(colon + 1), p.repeats);
    if (p.length < 1 || p.repeats < 2 || p.length > 1000000 || p.repeats > 1000000 ||
        p.length * p.repeats > 10000000) {
        throw bad();
    }
    return p;
}

double Census::mean(std::size_t stat, std::size_t x) const {
    return rows[stat][x] == 0 ? std::numeric_limits<double>::quiet_NaN()
                              : sum[stat][x] / static_cast<double>(rows[stat][x]);
}

bool Census::sink(std::size_t x) const {
    return rows[1][x] > 0 && mean(1, x) >= sink_threshold; // 1: first_token
}

void Census::add(const Census& o, std::string_view what) {
    if (o.layers != layers || o.heads != heads) {
        throw InputError(std::string(what) + ": expected a census of " + std::to_string(layers) +
                         " layers and " + std::to_string(heads) + " heads, got " +
                         std::to_string(o.layers) + " layers and " + std::to_string(o.heads) +
                         " heads");
    }
    if (o.sink_threshold != sink_threshold) {
        throw InputError(std::string(what) + ": expected sink_threshold " +
                         std::to_string(sink_threshold) + ", got " +
                         std::to_string(o.sink_threshold));
    }
    for (std::size_t stat = 0; stat < kHeadStats; ++stat) {
        for (std::size_t x = 0; x < layers * heads; ++x) {
            sum[stat][x] += o.sum[stat][x];
            rows[stat][x] += o.rows[stat][x];
        }
    }
}

std::vector<std::vector<std::int64_t>> probe_sequences(const InductionProbe& probe,
                                                       std::size_t count,
                                                       std::uint64_t seed,
                                                       std::size_t vocabulary,
                                                       const std::vector<std::int64_t>& special) {
    std::vector<std::int64_t> allowed;
    for (std::size_t id = 0; id < vocabulary; ++id) {
        if (std::find(special.begin(), special.end(), static_cast<std::int64_t>(id)) ==
            special.end()) {
            allowed.push_back(static_cast<std::int64_t>(id));
        }
    }
    if (allowed.empty()) {
        throw InputError(option_name("probe") + ": the vocabulary has no ordinary token to draw");
    }
    std::uint64_t state = seed;
    const auto next = [&state] { // splitmix64
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31U);
    };
    const std::uint64_t m = allowed.size();
    const std::uint64_t limit =
        std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % m;
    std::vector<std::vector<std::int64_t>> out(count);
    for (std::vector<std::int64_t>& seq : out) {
        std::vector<std::int64_t> once(probe.length);
        for (std::int64_t& id : once) {
            std::uint64_t r = next();
            while (r >= limit) { // no modulo bias
                r = next();
            }
            id = allowed[r % m];
        }
        for (std::size_t k = 0; k < probe.repeats; ++k) {
            seq.insert(seq.end(), once.begin(), once.end());
        }
    }
    return out;
}

namespace {

/// The ids the model's tokenizer adds around every text (BOS, [CLS] and [SEP], ...): what
/// a probe leaves out. None when the model has no tokenizer.
std::vector<std::int64_t> special_ids(const std::string& params, const fs::path& base) {
    const fs::path path = model::resolve_model_path(params, base);
    std::error_code ec;
    const fs::path folder = fs::is_directory(path, ec) ? path : path.parent_path();
    if (!model::is_gguf_path(path.string()) &&
        text::tokenizer_file_in(folder.empty() ? fs::path(".") : folder).empty()) {
        return {};
    }
    const auto tokenizer = text::load_tokenizer(model::is_gguf_path(path.string()) ? path : folder);
    return tokenizer->encode_ids("", true);
}

/// One text's statistics added to the pool (made on the first text).
void pool(Census& c, const std::vector<HeadStatTotals>& layers) {
    if (c.layers == 0) {
        c.layers = layers.size();
        c.heads = layers.front().heads;
        for (std::size_t stat = 0; stat < kHeadStats; ++stat) {
            c.sum[stat].assign(c.layers * c.heads, 0.0);
            c.rows[stat].assign(c.layers * c.heads, 0);
        }
    }
    for (std::size_t l = 0; l < layers.size(); ++l) {
        const HeadStatTotals& t = layers[l];
        for (std::size_t stat = 0; stat < kHeadStats; ++stat) {
            for (std::size_t b = 0; b < t.batch; ++b) {
                for (std::size_t h = 0; h < t.heads; ++h) {
                    c.sum[stat][l * c.heads + h] += t.sum[stat][b * t.heads + h];
                    c.rows[stat][l * c.heads + h] += t.rows[stat][b * t.heads + h];
                }
            }
        }
    }
}

/// The model run of one text ("text" tokenized as --text is, "token_ids" as given).
std::vector<HeadStatTotals> text_statistics(const CensusRequest& r, const json& input) {
    json doc = input;
    doc["params"] = r.params;
    doc["return"] = json::array({"head_stats"});
    const ModelRun run = decode_model_run(doc, r.base);
    SolveOptions o = r.solve;
    o.want_weights = false;
    o.weights_to = nullptr;
    o.rollout = nullptr;
    return solve_model_run(run, o).head_stat_totals;
}

} // namespace

json census_input(const CensusRequest& r,
                  const std::vector<std::vector<std::int64_t>>& probes,
                  std::size_t i,
                  std::string& where) {
    if (i < r.texts.size()) {
        const CensusText& t = r.texts[i];
        where = r.texts_name + ": line " + std::to_string(t.line) + ": ";
        return t.text ? json{{"text", *t.text}} : json{{"token_ids", t.token_ids}};
    }
    where = "probe " + std::to_string(i - r.texts.size()) + ": ";
    return json{{"token_ids", probes.at(i - r.texts.size())}};
}

std::vector<std::vector<std::int64_t>> census_probes(const CensusRequest& r) {
    if (!r.probe) {
        return {};
    }
    const ModelRun first = decode_model_run({{"params", r.params}, {"token_ids", {0}}}, r.base);
    return probe_sequences(*r.probe,
                           r.probes,
                           r.seed,
                           model::vocabulary_size(*first.folder, first.spec),
                           special_ids(r.params, r.base));
}

void CensusBest::add(std::size_t index, const std::vector<HeadStatTotals>& of_text) {
    if (layers == 0 && !of_text.empty()) {
        layers = of_text.size();
        heads = of_text.front().heads;
        for (std::size_t stat = 0; stat < kHeadStats; ++stat) {
            text[stat].assign(layers * heads, -1);
            value[stat].assign(layers * heads, 0.0);
        }
    }
    for (std::size_t l = 0; l < std::min(layers, of_text.size()); ++l) {
        const HeadStatTotals& t = of_text[l];
        for (std::size_t stat = 0; stat < kHeadStats; ++stat) {
            for (std::size_t h = 0; h < std::min(heads, t.heads); ++h) {
                double sum = 0.0;
                std::int64_t rows = 0;
                for (std::size_t b = 0; b < t.batch; ++b) {
                    sum += t.sum[stat][b * t.heads + h];
                    rows += t.rows[stat][b * t.heads + h];
                }
                const std::size_t x = l * heads + h;
                const double mean = rows > 0 ? sum / static_cast<double>(rows) : 0.0;
                if (rows > 0 && !std::isnan(mean) && (text[stat][x] < 0 || mean > value[stat][x])) {
                    text[stat][x] = static_cast<std::int64_t>(index);
                    value[stat][x] = mean;
                }
            }
        }
    }
}

Census run_census(const CensusRequest& r) {
    const std::vector<std::vector<std::int64_t>> probes = census_probes(r);
    Census c;
    c.sink_threshold = r.sink_threshold;
    const std::size_t total = r.texts.size() + probes.size();
    // Texts run `jobs` at a time, a chunk at once; each chunk is pooled in input order, so
    // the census does not depend on the jobs. The first bad text in input order is the
    // error, as with one job.
    const unsigned jobs = std::max(1U, r.jobs);
    const std::size_t chunk = static_cast<std::size_t>(jobs) * 4;
    CensusRequest one = r;
    if (jobs > 1 && one.solve.threads == 0) {
        one.solve.threads = 1; // the texts share the cores, not each text's kernels
    }
    // Every text runs the same model: its layers read once and kept, when they fit in a
    // quarter of the memory limit (else each run reads each layer, as one run does).
    BlockCache cache;
    if (total > 1 && one.solve.block_cache == nullptr &&
        BlockCache::fits(decode_model_run({{"params", r.params}, {"token_ids", {0}}}, r.base),
                         io::memory_limit() / 4)) {
        one.solve.block_cache = &cache;
    }
    for (std::size_t first = 0; first < total; first += chunk) {
        const std::size_t n = std::min(chunk, total - first);
        std::vector<std::vector<HeadStatTotals>> stats(n);
        std::vector<std::exception_ptr> errors(n);
        attn::detail::parallel_for(
            n, std::min<unsigned>(jobs, static_cast<unsigned>(n)), [&](unsigned, std::size_t k) {
                std::string where;
                try {
                    stats[k] = text_statistics(one, census_input(r, probes, first + k, where));
                } catch (const InputError& e) {
                    errors[k] = std::make_exception_ptr(InputError(where + e.marked()));
                } catch (...) {
                    errors[k] = std::current_exception();
                }
            });
        for (std::size_t k = 0; k < n; ++k) {
            if (errors[k]) {
                std::rethrow_exception(errors[k]);
            }
            pool(c, stats[k]);
            if (r.on_text) {
                r.on_text(first + k, stats[k]);
            }
        }
        if (r.progress) {
            r.progress(first + n, total);
        }
    }
    return c;
}

} // namespace attn::problem
