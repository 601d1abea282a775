// The strict safetensors reader: the header (JSON, offsets tiling the payload, dtypes),
// then only the tensors a layer needs, each checked against the bytes present before it
// is allocated. The checkpoint layouts are in safetensors_layouts.cpp. It does not write
// safetensors files.
#include "attn/model/safetensors.hpp"

#include "attn/error.hpp"
#include "attn/io/detail.hpp"
#include "attn/io/limits.hpp"
#include "attn/model/quants.hpp"
#include "detail.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <fcntl.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>
#include <utility>

namespace attn::model {
namespace {

using namespace detail;

namespace fs = std::filesystem;
using nlohmann::json;

/// The format caps nothing but the header; we cap the rank as the NPY reader does.
constexpr std::size_t max_rank = 32;

/// Element sizes of every dtype the format defines (sub-byte F4/F6 excepted).
struct DTypeInfo {
    std::string_view code;
    std::size_t size;
};
constexpr std::array<DTypeInfo, 16> dtype_table = {{
    {"BOOL", 1},
    {"U8", 1},
    {"I8", 1},
    {"F8_E5M2", 1},
    {"F8_E4M3", 1},
    {"F8_E8M0", 1},
    {"I16", 2},
    {"U16", 2},
    {"F16", 2},
    {"BF16", 2},
    {"I32", 4},
    {"U32", 4},
    {"F32", 4},
    {"I64", 8},
    {"U64", 8},
    {"F64", 8},
}};

/// "NAME: tensor 'T': "
std::string tensor_where(std::string_view name, std::string_view tensor) {
    return std::string(name) + ": tensor " + quote_name(tensor) + ": ";
}

std::uint64_t load_le(const std::uint8_t* p, std::size_t n) {
    std::uint64_t v = 0;
    for (std::size_t k = n; k-- > 0;) {
        v = (v << 8) | p[k];
    }
    return v;
}

/// "[begin, end]" as the header writes it.
std::string offsets_text(const SafetensorsEntry& e) {
    return "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
}

/// nlohmann's message without its "[json.exception...] parse error at ...: " preamble.
std::string json_detail(const std::exception& e) {
    std::string detail = e.what();
    const std::size_t at = detail.find("parse error");
    if (at != std::string::npos) {
        const std::size_t colon = detail.find(": ", at);
        if (colon != std::string::npos) {
            return io::message_text(detail.substr(colon + 2), 300);
        }
    }
    const std::size_t bracket = detail.find("] ");
    if (bracket != std::string::npos) {
        detail = detail.substr(bracket + 2);
    }
    return io::message_text(detail, 300);
}

} // namespace

json detail::parse_header_json(std::string_view text, const std::string& name) {
    std::vector<std::set<std::string>> open;
    std::string duplicate;
    const json::parser_callback_t watch =
        [&](int /*depth*/, json::parse_event_t event, json& parsed) {
            if (event == json::parse_event_t::object_start) {
                open.emplace_back();
            } else if (event == json::parse_event_t::object_end) {
                if (!open.empty()) {
                    open.pop_back();
                }
            } else if (event == json::parse_event_t::key && !open.empty() && parsed.is_string()) {
                if (!open.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
                    duplicate = parsed.get<std::string>();
                }
            }
            return true;
        };
    json j;
    try {
        j = json::parse(text.begin(), text.end(), watch);
    } catch (const json::parse_error& e) {
        throw InputError(name + ": invalid JSON header: byte " + std::to_string(e.byte) + ": " +
                         json_detail(e));
    } catch (const json::exception& e) {
        throw InputError(name + ": invalid JSON header: " + json_detail(e));
    }
    if (!duplicate.empty()) {
        throw InputError(name + ": header has the key " + quote_name(duplicate) + " twice");
    }
    return j;
}

namespace {

/// One tensor entry of the header, checked on its own (the tiling is checked afterwards).
SafetensorsEntry parse_entry(const std::string& key,
                             const json& value,
                             std::uint64_t data_size,
                             const std::string& name) {
    const std::string where = tensor_where(name, key);
    if (!value.is_object()) {
        throw InputError(where +
                         "expected an object {\"dtype\", \"shape\", \"data_offsets\"}, got " +
                         std::string(value.type_name()));
    }
    for (const auto& [field, unused] : value.items()) {
        if (field != "dtype" && field != "shape" && field != "data_offsets") {
            throw InputError(where + "unexpected field " + quote_name(field) +
                             " (expected dtype, shape, data_offsets)");
        }
    }
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
        if (!value.contains(field)) {
            throw InputError(where + "missing \"" + field + "\"");
        }
    }
    SafetensorsEntry e;
    e.name = key;

    const json& dtype = value["dtype"];
    if (!dtype.is_string()) {
        throw InputError(where + "dtype: expected a string such as \"F32\", got " +
                         io::message_text(dtype.dump(), 40));
    }
    e.dtype = dtype.get<std::string>();
    const auto known = std::find_if(dtype_table.begin(),
                                    dtype_table.end(),
                                    [&](const DTypeInfo& d) { return d.code == e.dtype; });
    if (known == dtype_table.end()) {
        throw InputError(where + "unknown dtype " + quote_name(e.dtype) +
                         " (expected F32, F16, BF16, F64, BOOL, U8, I8, F8_E5M2, F8_E4M3, "
                         "F8_E8M0, I16, U16, I32, U32, I64 or U64)");
    }
    e.item_size = known->size;

    const json& shape = value["shape"];
    if (!shape.is_array()) {
        throw InputError(where + "shape: expected a list of non-negative integers, got " +
                         io::message_text(shape.dump(), 40));
    }
    if (shape.size() > max_rank) {
        throw InputError(where + "shape has " + std::to_string(shape.size()) +
                         " dimensions, more than " + std::to_string(max_rank));
    }
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (!shape[i].is_number_unsigned() ||
            shape[i].get<std::uint64_t>() > std::numeric_limits<std::size_t>::max()) {
            throw InputError(where + "shape: [" + std::to_string(i) +
                             "]: expected a non-negative integer, got " +
                             io::message_text(shape[i].dump(), 40));
        }
        e.shape.push_back(static_cast<std::size_t>(shape[i].get<std::uint64_t>()));
    }
    std::size_t count = 1;
    std::size_t bytes = 0;
    for (const std::size_t d : e.shape) {
        if (!checked_mul(count, d, count)) {
            throw InputError(where + "shape " + shape_string(e.shape) +
                             " is too large (its element count overflows)");
        }
    }
    if (!checked_mul(count, e.item_size, bytes)) {
        throw InputError(where + "shape " + shape_string(e.shape) +
                         " is too large (its byte size overflows)");
    }

    const json& offsets = value["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
        throw InputError(where +
                         "data_offsets: expected [begin, end] (two non-negative "
                         "integers), got " +
                         io::message_text(offsets.dump(), 60));
    }
    e.begin = offsets[0].get<std::uint64_t>();
    e.end = offsets[1].get<std::uint64_t>();
    if (e.begin > e.end) {
        throw InputError(where + "data_offsets " + offsets_text(e) + ": begin is after end");
    }
    if (e.end > data_size) {
        throw InputError(where + "data_offsets " + offsets_text(e) +
                         " reach past the end of the data (" + std::to_string(data_size) +
                         " bytes)");
    }
    if (e.end - e.begin != bytes) {
        throw InputError(where + "data_offsets " + offsets_text(e) + " hold " +
                         std::to_string(e.end - e.begin) + " bytes, but " + e.dtype + " " +
                         shape_string(e.shape) + " needs " + std::to_string(bytes));
    }
    return e;
}

/// The format's rule: the tensors tile the data section, with no overlap and no gap (so a
/// file cannot hide other content between them, and every byte has one reading).
void check_tiling(const std::vector<SafetensorsEntry>& tensors,
                  std::uint64_t data_size,
                  const std::string& name) {
    std::vector<const SafetensorsEntry*> order;
    order.reserve(tensors.size());
    for (const SafetensorsEntry& e : tensors) {
        order.push_back(&e);
    }
    std::sort(order.begin(), order.end(), [](const SafetensorsEntry* a, const SafetensorsEntry* b) {
        return std::pair(a->begin, a->end) < std::pair(b->begin, b->end);
    });
    std::uint64_t pos = 0;
    const SafetensorsEntry* previous = nullptr;
    for (const SafetensorsEntry* e : order) {
        if (e->begin < pos) {
            throw InputError(name + ": tensors " + quote_name(previous->name) + " " +
                             offsets_text(*previous) + " and " + quote_name(e->name) + " " +
                             offsets_text(*e) + " overlap");
        }
        if (e->begin > pos) {
            throw InputError(name + ": data bytes [" + std::to_string(pos) + ", " +
                             std::to_string(e->begin) +
                             ") belong to no tensor (the format allows no gaps)");
        }
        pos = e->end;
        previous = e;
    }
    if (pos != data_size) {
        throw InputError(name + ": data bytes [" + std::to_string(pos) + ", " +
                         std::to_string(data_size) +
                         ") belong to no tensor (the format allows no gaps)");
    }
}

/// Refuses a float32 copy of `count` elements (plus `extra` bytes) above memory_limit(), or
/// (`as` the dtype, count 0) a copy of the stored bytes.
void check_fits(std::size_t count,
                std::uint64_t extra,
                const SafetensorsEntry& e,
                std::string_view name,
                std::string_view as = "float32") {
    std::size_t bytes = 0;
    const std::uint64_t limit = io::memory_limit();
    const bool fits = checked_mul(count, sizeof(float), bytes) &&
                      extra <= std::numeric_limits<std::uint64_t>::max() - bytes;
    const std::uint64_t need = fits ? bytes + extra : io::unlimited_memory;
    if (need > limit) {
        throw InputError(tensor_where(name, e.name) + "the array of shape " +
                         shape_string(e.shape) + " needs " + io::format_size(need) +
                         " to load as " + std::string(as) + ", more than the memory limit of " +
                         io::format_size(limit) + " (--max-memory)");
    }
}

} // namespace

// ---------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------

const SafetensorsEntry* SafetensorsHeader::find(std::string_view name) const {
    const auto it = std::lower_bound(
        tensors.begin(), tensors.end(), name, [](const SafetensorsEntry& e, std::string_view n) {
            return e.name < n;
        });
    return it != tensors.end() && it->name == name ? &*it : nullptr;
}

SafetensorsHeader parse_safetensors_header(std::span<const std::uint8_t> bytes,
                                           std::uint64_t file_size,
                                           std::string_view name_in) {
    const std::string name(name_in);
    if (file_size < 8 || bytes.size() < 8) {
        throw InputError(name + ": not a safetensors file: " + std::to_string(file_size) +
                         " bytes, too short for the 8-byte header length");
    }
    const std::uint64_t length = load_le(bytes.data(), 8);
    if (length > file_size - 8) {
        throw InputError(name + ": truncated: the header length says " + std::to_string(length) +
                         " bytes, but only " + std::to_string(file_size - 8) + " follow");
    }
    if (length > safetensors_max_header) {
        throw InputError(name + ": header length " + std::to_string(length) +
                         " is more than the format's limit of " +
                         std::to_string(safetensors_max_header) + " bytes");
    }
    const std::uint64_t limit = io::memory_limit();
    if (length > limit / 16) {
        throw InputError(name + ": a JSON header of " + io::format_size(length) +
                         " may need up to 16 times that to parse, more than the memory limit "
                         "of " +
                         io::format_size(limit) + " (--max-memory)");
    }
    if (bytes.size() - 8 < length) {
        throw InputError(name + ": truncated: the file ended inside the header");
    }
    const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8),
                                static_cast<std::size_t>(length));
    if (text.empty() || text.front() != '{') {
        throw InputError(name + ": not a safetensors file: the header does not start with '{'");
    }
    io::check_json_depth(text, name);
    const json j = parse_header_json(text, name);
    if (!j.is_object()) {
        throw InputError(name + ": the header is not a JSON object");
    }

    SafetensorsHeader h;
    h.data_start = 8 + length;
    h.data_size = file_size - h.data_start;
    for (const auto& [key, value] : j.items()) { // sorted by key: h.tensors is sorted too
        if (key == "__metadata__") {
            if (!value.is_object()) {
                throw InputError(name + ": __metadata__: expected an object of strings, got " +
                                 std::string(value.type_name()));
            }
            for (const auto& [mkey, mvalue] : value.items()) {
                if (!mvalue.is_string()) {
                    throw InputError(name + ": __metadata__: " + quote_name(mkey) +
                                     ": expected a string, got " + std::string(mvalue.type_name()));
                }
                h.metadata.emplace(mkey, mvalue.get<std::string>());
            }
            continue;
        }
        h.tensors.push_back(parse_entry(key, value, h.data_size, name));
    }
    check_tiling(h.tensors, h.data_size, name);
    return h;
}

io::Array decode_safetensors_tensor(const SafetensorsEntry& e,
                                    std::span<const std::uint8_t> data,
                                    std::string_view name) {
    const char* numpy_name = nullptr;
    if (e.dtype == "F32") {
        numpy_name = "float32";
    } else if (e.dtype == "F16") {
        numpy_name = "float16";
    } else if (e.dtype == "BF16") {
        numpy_name = "bfloat16";
    } else if (e.dtype == "F64") {
        numpy_name = "float64";
    } else {
        throw InputError(tensor_where(name, e.name) + "dtype " + e.dtype +
                         " is not supported for weights (expected F32, F16, BF16 or F64)");
    }
    const std::size_t count = element_count(e.shape);
    if (data.size() != e.end - e.begin || data.size() != count * e.item_size) {
        throw InputError(tensor_where(name, e.name) + "truncated: expected " +
                         std::to_string(e.end - e.begin) + " bytes, got " +
                         std::to_string(data.size()));
    }
    check_fits(count, 0, e, name);
    io::Array out;
    out.shape = e.shape;
    out.dtype = numpy_name;
    out.values.resize(count);
    const std::uint8_t* p = data.data();
    float* dst = out.values.data();
    if (e.dtype == "F32") {
        for (std::size_t i = 0; i < count; ++i) {
            dst[i] = std::bit_cast<float>(static_cast<std::uint32_t>(load_le(p + 4 * i, 4)));
        }
    } else if (e.dtype == "F16") {
        for (std::size_t i = 0; i < count; ++i) {
            dst[i] = half_to_float(static_cast<std::uint16_t>(load_le(p + 2 * i, 2)));
        }
    } else if (e.dtype == "BF16") {
        // bfloat16 is the top half of a binary32: widening is exact, NaN payloads included.
        for (std::size_t i = 0; i < count; ++i) {
            dst[i] = std::bit_cast<float>(static_cast<std::uint32_t>(load_le(p + 2 * i, 2) << 16));
        }
    } else {
        for (std::size_t i = 0; i < count; ++i) {
            dst[i] = static_cast<float>(std::bit_cast<double>(load_le(p + 8 * i, 8)));
        }
    }
    return out;
}

std::map<std::string, io::Array> parse_safetensors(std::span<const std::uint8_t> bytes,
                                                   std::string_view name) {
    const SafetensorsHeader h = parse_safetensors_header(bytes, bytes.size(), name);
    std::map<std::string, io::Array> out;
    for (const SafetensorsEntry& e : h.tensors) {
        const auto start = static_cast<std::size_t>(h.data_start + e.begin);
        out.emplace(e.name,
                    decode_safetensors_tensor(
                        e, bytes.subspan(start, static_cast<std::size_t>(e.end - e.begin)), name));
    }
    return out;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path)
    : shown_(shown_path(path.string())), fd_(open_for_reading(path.string())) {
    struct stat st {};
    if (::fstat(fd_.get(), &st) != 0) {
        throw InputError::cannot_read(shown_, errno);
    }
    if (S_ISDIR(st.st_mode)) {
        throw InputError::cannot_read(shown_, EISDIR);
    }
    if (!S_ISREG(st.st_mode)) {
        // A pipe or device: no size to check offsets against, so read it whole.
        fd_.close();
        whole_ = io::read_file(path);
        header_ = parse_safetensors_header(whole_, whole_.size(), shown_);
        return;
    }
    const auto size = static_cast<std::uint64_t>(st.st_size);
    std::vector<std::uint8_t> head(static_cast<std::size_t>(std::min<std::uint64_t>(size, 8)));
    auto read_at = [&](std::uint8_t* dst, std::size_t n, std::uint64_t offset) {
        pread_exactly(fd_.get(), dst, n, offset, shown_);
    };
    read_at(head.data(), head.size(), 0);
    if (head.size() == 8) {
        // Read the header only when its length is plausible; otherwise the 8 bytes are
        // enough for parse_safetensors_header to say what is wrong.
        const std::uint64_t length = load_le(head.data(), 8);
        if (length <= size - 8 && length <= safetensors_max_header &&
            length <= io::memory_limit() / 16) {
            head.resize(static_cast<std::size_t>(8 + length));
            read_at(head.data() + 8, static_cast<std::size_t>(length), 8);
        }
    }
    header_ = parse_safetensors_header(head, size, shown_);
    // A product multiplies the weights where they lie (stored()): the file is mapped too.
    if (map_.emplace(path).bytes().size() != size) {
        throw InputError(shown_ + ": changed while it was being read (its size changed)");
    }
}

io::Array SafetensorsFile::read(const SafetensorsEntry& e) const {
    const auto bytes = static_cast<std::size_t>(e.end - e.begin);
    if (fd_.get() < 0) {
        const auto start = static_cast<std::size_t>(header_.data_start + e.begin);
        return decode_safetensors_tensor(
            e, std::span<const std::uint8_t>(whole_).subspan(start, bytes), shown_);
    }
    // The raw bytes and their float32 copy are both held for a moment.
    check_fits(element_count(e.shape), bytes, e, shown_);
    std::vector<std::uint8_t> raw(bytes);
    pread_exactly(fd_.get(), raw.data(), bytes, header_.data_start + e.begin, shown_);
    return decode_safetensors_tensor(e, raw, shown_);
}

io::Array SafetensorsFile::read_rows(const SafetensorsEntry& e,
                                     std::span<const std::size_t> rows) const {
    const std::size_t columns = check_matrix_rows(e.shape, rows, tensor_where(shown_, e.name));
    io::Array out;
    out.shape = {rows.size(), columns};
    out.values.reserve(rows.size() * columns);
    SafetensorsEntry one = e; // a one-row tensor: read() checks and decodes it
    one.shape = {1, columns};
    const std::uint64_t row_bytes = static_cast<std::uint64_t>(columns) * e.item_size;
    for (const std::size_t r : rows) {
        one.begin = e.begin + r * row_bytes;
        one.end = one.begin + row_bytes;
        io::Array row = read(one);
        out.dtype = row.dtype;
        out.values.insert(out.values.end(), row.values.begin(), row.values.end());
    }
    return out;
}

std::optional<StoredTensor> SafetensorsFile::stored(const SafetensorsEntry& e) const {
    const std::optional<std::uint32_t> type = ggml_type_named(e.dtype);
    if (!type) {
        return std::nullopt;
    }
    StoredTensor out;
    out.type = *type;
    out.shape = e.shape;
    // parse_safetensors_header checked that the tensor lies inside the file (as mapped).
    const auto bytes = static_cast<std::size_t>(e.end - e.begin);
    const auto start = static_cast<std::size_t>(header_.data_start + e.begin);
    const std::span<const std::uint8_t> all =
        map_ ? map_->bytes() : std::span<const std::uint8_t>(whole_);
    out.bytes = all.subspan(start, bytes);
    return out;
}

} // namespace attn::model
