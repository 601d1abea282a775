// The strict safetensors reader and the checkpoint layouts (torch-mha, gpt2, llama, attn)
// mapped onto nn.Linear-layout Projections. It reads the header first and then only the
// tensors a layer needs; it does not interpret anything else in a checkpoint (RoPE tables,
// norms, MLPs) and does not write safetensors files.
#include "attn/io/safetensors.hpp"

#include "attn/error.hpp"
#include "attn/io/limits.hpp"

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

namespace attn::io {
namespace {

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

std::string errno_text(int err) {
    return std::system_category().message(err);
}

/// A name from the file, quoted for a one-line message.
std::string quote_name(std::string_view s) {
    return "'" + message_text(s, 120) + "'";
}

/// "NAME: tensor 'T': "
std::string tensor_where(std::string_view name, std::string_view tensor) {
    return std::string(name) + ": tensor " + quote_name(tensor) + ": ";
}

bool checked_mul(std::size_t a, std::size_t b, std::size_t& out) {
    if (a != 0 && b > std::numeric_limits<std::size_t>::max() / a) {
        return false;
    }
    out = a * b;
    return true;
}

std::size_t element_count(const std::vector<std::size_t>& shape) {
    std::size_t n = 1;
    for (const std::size_t d : shape) {
        n *= d; // checked when the header was parsed
    }
    return n;
}

std::uint64_t load_le(const std::uint8_t* p, std::size_t n) {
    std::uint64_t v = 0;
    for (std::size_t k = n; k-- > 0;) {
        v = (v << 8) | p[k];
    }
    return v;
}

/// IEEE binary16 -> binary32, exact for every input (subnormals, infinities, NaN payloads).
/// The same conversion as the NPY reader's (array.cpp keeps its copy private).
float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1fu;
    const std::uint32_t mantissa = h & 0x3ffu;
    std::uint32_t bits = 0;
    if (exponent == 0) {
        // Zero or subnormal: mantissa * 2^-24 is a normal float32, computed exactly.
        const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
        bits = sign | std::bit_cast<std::uint32_t>(magnitude);
    } else if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13); // inf, or NaN keeping its payload
    } else {
        bits = sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13);
    }
    return std::bit_cast<float>(bits);
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
            return message_text(detail.substr(colon + 2), 300);
        }
    }
    const std::size_t bracket = detail.find("] ");
    if (bracket != std::string::npos) {
        detail = detail.substr(bracket + 2);
    }
    return message_text(detail, 300);
}

/// Parses the header text, refusing duplicate keys in any object (nlohmann keeps the last
/// one silently; the reference implementation refuses them).
json parse_header_json(std::string_view text, const std::string& name) {
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
                         message_text(dtype.dump(), 40));
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
                         message_text(shape.dump(), 40));
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
                             message_text(shape[i].dump(), 40));
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
                         message_text(offsets.dump(), 60));
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

/// Refuses a float32 copy of `count` elements (plus `extra` bytes) above memory_limit().
void check_fits(std::size_t count,
                std::uint64_t extra,
                const SafetensorsEntry& e,
                std::string_view name) {
    std::size_t bytes = 0;
    const std::uint64_t limit = memory_limit();
    const bool fits = checked_mul(count, sizeof(float), bytes) &&
                      extra <= std::numeric_limits<std::uint64_t>::max() - bytes;
    const std::uint64_t need = fits ? bytes + extra : unlimited_memory;
    if (need > limit) {
        throw InputError(tensor_where(name, e.name) + "the array of shape " +
                         shape_string(e.shape) + " needs " + format_size(need) +
                         " to load as float32, more than the memory limit of " +
                         format_size(limit) + " (--max-memory)");
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
    const std::uint64_t limit = memory_limit();
    if (length > limit / 16) {
        throw InputError(name + ": a JSON header of " + format_size(length) +
                         " may need up to 16 times that to parse, more than the memory limit "
                         "of " +
                         format_size(limit) + " (--max-memory)");
    }
    if (bytes.size() - 8 < length) {
        throw InputError(name + ": truncated: the file ended inside the header");
    }
    const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8),
                                static_cast<std::size_t>(length));
    if (text.empty() || text.front() != '{') {
        throw InputError(name + ": not a safetensors file: the header does not start with '{'");
    }
    check_json_depth(text, name);
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

Array decode_safetensors_tensor(const SafetensorsEntry& e,
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
    Array out;
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

std::map<std::string, Array> parse_safetensors(std::span<const std::uint8_t> bytes,
                                               std::string_view name) {
    const SafetensorsHeader h = parse_safetensors_header(bytes, bytes.size(), name);
    std::map<std::string, Array> out;
    for (const SafetensorsEntry& e : h.tensors) {
        const auto start = static_cast<std::size_t>(h.data_start + e.begin);
        out.emplace(e.name,
                    decode_safetensors_tensor(
                        e, bytes.subspan(start, static_cast<std::size_t>(e.end - e.begin)), name));
    }
    return out;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path)
    : shown_(message_text(path.string(), 4096)) {
    do {
        fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    } while (fd_ < 0 && errno == EINTR);
    if (fd_ < 0) {
        throw InputError(shown_ + ": cannot read: " + errno_text(errno));
    }
    try {
        struct stat st {};
        if (::fstat(fd_, &st) != 0) {
            throw InputError(shown_ + ": cannot read: " + errno_text(errno));
        }
        if (S_ISDIR(st.st_mode)) {
            throw InputError(shown_ + ": cannot read: " + errno_text(EISDIR));
        }
        if (!S_ISREG(st.st_mode)) {
            // A pipe or device: no size to check offsets against, so read it whole.
            ::close(fd_);
            fd_ = -1;
            whole_ = read_file(path);
            header_ = parse_safetensors_header(whole_, whole_.size(), shown_);
            return;
        }
        const auto size = static_cast<std::uint64_t>(st.st_size);
        std::vector<std::uint8_t> head(static_cast<std::size_t>(std::min<std::uint64_t>(size, 8)));
        auto read_at = [&](std::uint8_t* dst, std::size_t n, std::uint64_t offset) {
            std::size_t done = 0;
            while (done < n) {
                const ssize_t got =
                    ::pread(fd_, dst + done, n - done, static_cast<off_t>(offset + done));
                if (got < 0 && errno == EINTR) {
                    continue;
                }
                if (got < 0) {
                    throw InputError(shown_ + ": cannot read: " + errno_text(errno));
                }
                if (got == 0) {
                    throw InputError(shown_ + ": truncated: the file ended while it was read");
                }
                done += static_cast<std::size_t>(got);
            }
        };
        read_at(head.data(), head.size(), 0);
        if (head.size() == 8) {
            // Read the header only when its length is plausible; otherwise the 8 bytes are
            // enough for parse_safetensors_header to say what is wrong.
            const std::uint64_t length = load_le(head.data(), 8);
            if (length <= size - 8 && length <= safetensors_max_header &&
                length <= memory_limit() / 16) {
                head.resize(static_cast<std::size_t>(8 + length));
                read_at(head.data() + 8, static_cast<std::size_t>(length), 8);
            }
        }
        header_ = parse_safetensors_header(head, size, shown_);
    } catch (...) {
        if (fd_ >= 0) {
            ::close(fd_);
            fd_ = -1;
        }
        throw;
    }
}

SafetensorsFile::~SafetensorsFile() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

Array SafetensorsFile::read(const SafetensorsEntry& e) const {
    const auto bytes = static_cast<std::size_t>(e.end - e.begin);
    if (fd_ < 0) {
        const auto start = static_cast<std::size_t>(header_.data_start + e.begin);
        return decode_safetensors_tensor(
            e, std::span<const std::uint8_t>(whole_).subspan(start, bytes), shown_);
    }
    // The raw bytes and their float32 copy are both held for a moment.
    check_fits(element_count(e.shape), bytes, e, shown_);
    std::vector<std::uint8_t> raw(bytes);
    std::size_t done = 0;
    const std::uint64_t offset = header_.data_start + e.begin;
    while (done < bytes) {
        const ssize_t got =
            ::pread(fd_, raw.data() + done, bytes - done, static_cast<off_t>(offset + done));
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            throw InputError(shown_ + ": cannot read: " + errno_text(errno));
        }
        if (got == 0) {
            throw InputError(shown_ + ": truncated: the file ended while it was read");
        }
        done += static_cast<std::size_t>(got);
    }
    return decode_safetensors_tensor(e, raw, shown_);
}

// ---------------------------------------------------------------------------------------
// Layouts
// ---------------------------------------------------------------------------------------

namespace {

struct LayoutInfo {
    ParamsLayout layout;
    std::string_view name;
    std::vector<std::string_view> signatures; ///< any of these names marks the layout
    std::vector<std::string_view> tensors;    ///< every name the layout reads
};

const std::vector<LayoutInfo>& layouts() {
    static const std::vector<LayoutInfo> table = {
        {ParamsLayout::attn,
         "attn",
         {"w_q", "w_k", "w_v", "w_o"},
         {"w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o"}},
        {ParamsLayout::torch_mha,
         "torch-mha",
         {"in_proj_weight", "q_proj_weight", "out_proj.weight"},
         {"in_proj_weight",
          "in_proj_bias",
          "q_proj_weight",
          "k_proj_weight",
          "v_proj_weight",
          "out_proj.weight",
          "out_proj.bias",
          "bias_k",
          "bias_v"}},
        {ParamsLayout::gpt2,
         "gpt2",
         {"c_attn.weight"},
         {"c_attn.weight", "c_attn.bias", "c_proj.weight", "c_proj.bias"}},
        {ParamsLayout::llama,
         "llama",
         {"q_proj.weight"},
         {"q_proj.weight",
          "k_proj.weight",
          "v_proj.weight",
          "o_proj.weight",
          "q_proj.bias",
          "k_proj.bias",
          "v_proj.bias",
          "o_proj.bias"}},
    };
    return table;
}

const LayoutInfo& layout_info(ParamsLayout layout) {
    for (const LayoutInfo& info : layouts()) {
        if (info.layout == layout) {
            return info;
        }
    }
    ATTN_ASSERT(false);
    return layouts().front();
}

std::string layout_names_text() {
    return "\"attn\", \"torch-mha\", \"gpt2\" or \"llama\"";
}

ParamsLayout parse_layout(const json& j) {
    if (j.is_string()) {
        for (const LayoutInfo& info : layouts()) {
            if (info.name == j.get<std::string>()) {
                return info.layout;
            }
        }
    }
    throw InputError("params.layout: expected " + layout_names_text() + ", got " +
                     message_text(j.dump(-1, ' ', false, json::error_handler_t::replace), 80));
}

Matrix as_matrix(const Array& a) {
    Matrix m = Matrix::from_shape({a.shape[0], a.shape[1]});
    std::copy(a.values.begin(), a.values.end(), m.begin());
    return m;
}

Vector as_vector(const Array& a) {
    Vector v = Vector::from_shape({a.shape[0]});
    std::copy(a.values.begin(), a.values.end(), v.begin());
    return v;
}

/// Rows [r0, r0 + n) of a matrix.
Matrix rows_of(const Matrix& m, std::size_t r0, std::size_t n) {
    const std::size_t cols = m.shape()[1];
    Matrix out = Matrix::from_shape({n, cols});
    std::copy(m.data() + r0 * cols, m.data() + (r0 + n) * cols, out.data());
    return out;
}

/// Columns [c0, c0 + n) of a Conv1D weight [in, out], transposed to nn.Linear's [n, in].
Matrix columns_transposed(const Matrix& m, std::size_t c0, std::size_t n) {
    const std::size_t in = m.shape()[0];
    const std::size_t cols = m.shape()[1];
    Matrix out = Matrix::from_shape({n, in});
    for (std::size_t r = 0; r < n; ++r) {
        for (std::size_t i = 0; i < in; ++i) {
            out.data()[r * in + i] = m.data()[i * cols + c0 + r];
        }
    }
    return out;
}

Vector slice(const Vector& v, std::size_t start, std::size_t n) {
    Vector out = Vector::from_shape({n});
    std::copy(v.data() + start, v.data() + start + n, out.data());
    return out;
}

/// The tensors of one layer, with messages that give the tensor's full name.
class LayerTensors {
  public:
    LayerTensors(const std::map<std::string, Array>& tensors,
                 std::string_view what,
                 std::string_view prefix)
        : tensors_(tensors), what_(what), prefix_(prefix) {}

    bool has(std::string_view key) const { return tensors_.count(std::string(key)) != 0; }

    std::string where(std::string_view key) const {
        return what_ + ": tensor " + quote_name(prefix_ + std::string(key)) + ": ";
    }

    [[noreturn]] void missing(std::string_view key, std::string_view layout) const {
        throw InputError(what_ + ": layout " + std::string(layout) + ": missing tensor " +
                         quote_name(prefix_ + std::string(key)));
    }

    /// A rank-2 weight; `form` names the expected layout in messages.
    std::optional<Matrix> matrix(std::string_view key, const char* form = "[out, in]") const {
        const auto it = tensors_.find(std::string(key));
        if (it == tensors_.end()) {
            return std::nullopt;
        }
        if (it->second.shape.size() != 2) {
            throw InputError(where(key) + "expected a rank-2 " + form + " weight, got shape " +
                             shape_string(it->second.shape));
        }
        return as_matrix(it->second);
    }

    std::optional<Vector> vector(std::string_view key) const {
        const auto it = tensors_.find(std::string(key));
        if (it == tensors_.end()) {
            return std::nullopt;
        }
        if (it->second.shape.size() != 1) {
            throw InputError(where(key) + "expected a rank-1 [out] bias, got shape " +
                             shape_string(it->second.shape));
        }
        return as_vector(it->second);
    }

    /// `count` must split in three (q, k, v stacked).
    std::size_t third(std::string_view key, std::size_t count, const char* what) const {
        if (count % 3 != 0) {
            throw InputError(where(key) + what + " " + std::to_string(count) +
                             " does not split in three (q, k, v stacked)");
        }
        return count / 3;
    }

  private:
    const std::map<std::string, Array>& tensors_;
    std::string what_;
    std::string prefix_;
};

void map_attn(const LayerTensors& t, Projections& p) {
    p.w_q = t.matrix("w_q");
    p.w_k = t.matrix("w_k");
    p.w_v = t.matrix("w_v");
    p.w_o = t.matrix("w_o");
    p.b_q = t.vector("b_q");
    p.b_k = t.vector("b_k");
    p.b_v = t.vector("b_v");
    p.b_o = t.vector("b_o");
}

void map_torch_mha(const LayerTensors& t, Projections& p) {
    for (const char* key : {"bias_k", "bias_v"}) {
        if (t.has(key)) {
            throw InputError(t.where(key) +
                             "add_bias_kv (an extra learned key/value row) is not supported");
        }
    }
    const bool fused = t.has("in_proj_weight");
    const bool separate =
        t.has("q_proj_weight") || t.has("k_proj_weight") || t.has("v_proj_weight");
    if (fused && separate) {
        throw InputError(t.where("q_proj_weight") +
                         "both in_proj_weight and q/k/v_proj_weight give the input projections");
    }
    if (fused) {
        const Matrix w = *t.matrix("in_proj_weight", "[3·E, E]");
        const std::size_t e = t.third("in_proj_weight", w.shape()[0], "first dimension");
        p.w_q = rows_of(w, 0, e);
        p.w_k = rows_of(w, e, e);
        p.w_v = rows_of(w, 2 * e, e);
    } else {
        for (const char* key : {"q_proj_weight", "k_proj_weight", "v_proj_weight"}) {
            if (!t.has(key)) {
                t.missing(key, "torch-mha");
            }
        }
        p.w_q = t.matrix("q_proj_weight");
        p.w_k = t.matrix("k_proj_weight");
        p.w_v = t.matrix("v_proj_weight");
    }
    if (const auto b = t.vector("in_proj_bias")) {
        // With separate q/k/v weights (kdim, vdim != embed_dim) the bias is still fused.
        const std::size_t e = t.third("in_proj_bias", b->shape()[0], "length");
        p.b_q = slice(*b, 0, e);
        p.b_k = slice(*b, e, e);
        p.b_v = slice(*b, 2 * e, e);
    }
    p.w_o = t.matrix("out_proj.weight");
    p.b_o = t.vector("out_proj.bias");
}

void map_gpt2(const LayerTensors& t, Projections& p) {
    // Conv1D computes y = x·W + b with W [in, out]: nn.Linear's weight is Wᵀ.
    if (!t.has("c_attn.weight")) {
        t.missing("c_attn.weight", "gpt2");
    }
    const Matrix w = *t.matrix("c_attn.weight", "[in, 3·out] (Conv1D)");
    const std::size_t e = t.third("c_attn.weight", w.shape()[1], "second dimension");
    p.w_q = columns_transposed(w, 0, e);
    p.w_k = columns_transposed(w, e, e);
    p.w_v = columns_transposed(w, 2 * e, e);
    if (const auto b = t.vector("c_attn.bias")) {
        const std::size_t eb = t.third("c_attn.bias", b->shape()[0], "length");
        p.b_q = slice(*b, 0, eb);
        p.b_k = slice(*b, eb, eb);
        p.b_v = slice(*b, 2 * eb, eb);
    }
    if (const auto wo = t.matrix("c_proj.weight", "[in, out] (Conv1D)")) {
        p.w_o = columns_transposed(*wo, 0, wo->shape()[1]);
    }
    p.b_o = t.vector("c_proj.bias");
}

void map_llama(const LayerTensors& t, Projections& p) {
    for (const char* key : {"q_proj.weight", "k_proj.weight", "v_proj.weight"}) {
        if (!t.has(key)) {
            t.missing(key, "llama");
        }
    }
    p.w_q = t.matrix("q_proj.weight");
    p.w_k = t.matrix("k_proj.weight");
    p.w_v = t.matrix("v_proj.weight");
    p.w_o = t.matrix("o_proj.weight");
    p.b_q = t.vector("q_proj.bias");
    p.b_k = t.vector("k_proj.bias");
    p.b_v = t.vector("v_proj.bias");
    p.b_o = t.vector("o_proj.bias");
}

/// The prefixes at which `names` hold a signature of one of `candidates`, sorted.
std::set<std::string> prefixes_with(const std::vector<std::string>& names,
                                    const std::vector<const LayoutInfo*>& candidates) {
    std::set<std::string> out;
    for (const std::string& n : names) {
        for (const LayoutInfo* info : candidates) {
            for (const std::string_view sig : info->signatures) {
                if (n.size() >= sig.size() &&
                    n.compare(n.size() - sig.size(), sig.size(), sig) == 0 &&
                    (n.size() == sig.size() || n[n.size() - sig.size() - 1] == '.')) {
                    out.insert(n.substr(0, n.size() - sig.size()));
                }
            }
        }
    }
    return out;
}

/// Names of `names` that start with `prefix`, with the prefix removed.
std::vector<std::string> names_at(const std::vector<std::string>& names,
                                  const std::string& prefix) {
    std::vector<std::string> out;
    for (const std::string& n : names) {
        if (n.size() >= prefix.size() && n.compare(0, prefix.size(), prefix) == 0) {
            out.push_back(n.substr(prefix.size()));
        }
    }
    return out;
}

/// Records the first non-finite value of a weight, for --check-finite.
void note_first_nonfinite(const Array& a, ProblemSource& s) {
    const auto bad =
        std::find_if(a.values.begin(), a.values.end(), [](float x) { return !std::isfinite(x); });
    if (bad != a.values.end()) {
        s.first_nonfinite = static_cast<std::size_t>(bad - a.values.begin());
        s.nonfinite_value = *bad;
    }
}

} // namespace

std::string_view layout_name(ParamsLayout layout) {
    return layout_info(layout).name;
}

std::vector<ParamsLayout> detect_layouts(const std::vector<std::string>& names) {
    std::vector<ParamsLayout> out;
    for (const LayoutInfo& info : layouts()) {
        const bool found = std::any_of(names.begin(), names.end(), [&](const std::string& n) {
            return std::find(info.signatures.begin(), info.signatures.end(), n) !=
                   info.signatures.end();
        });
        if (found) {
            out.push_back(info.layout);
        }
    }
    return out;
}

Projections map_layout(ParamsLayout layout,
                       const std::map<std::string, Array>& tensors,
                       std::string_view what,
                       std::string_view prefix) {
    const LayerTensors t(tensors, what, prefix);
    Projections p;
    switch (layout) {
    case ParamsLayout::attn:
        map_attn(t, p);
        break;
    case ParamsLayout::torch_mha:
        map_torch_mha(t, p);
        break;
    case ParamsLayout::gpt2:
        map_gpt2(t, p);
        break;
    case ParamsLayout::llama:
        map_llama(t, p);
        break;
    }
    return p;
}

bool is_checkpoint_params(const nlohmann::json& params) {
    if (params.is_object()) {
        return params.contains("file");
    }
    if (!params.is_string()) {
        return false;
    }
    const std::string& s = params.get_ref<const std::string&>();
    constexpr std::string_view ext = ".safetensors";
    if (s.size() < ext.size()) {
        return false;
    }
    return std::equal(ext.begin(),
                      ext.end(),
                      s.end() - static_cast<std::ptrdiff_t>(ext.size()),
                      [](char a, char b) {
                          const char lower =
                              (b >= 'A' && b <= 'Z') ? static_cast<char>(b - 'A' + 'a') : b;
                          return a == lower;
                      });
}

Projections load_checkpoint_params(const nlohmann::json& params,
                                   const std::filesystem::path& base,
                                   std::vector<ProblemSource>& sources) {
    std::string file;
    std::string prefix;
    std::optional<ParamsLayout> layout;
    if (params.is_string()) {
        file = params.get<std::string>();
    } else if (params.is_object()) {
        for (const auto& [key, value] : params.items()) {
            if (key == "file" || key == "prefix") {
                if (!value.is_string()) {
                    throw InputError("params." + key + ": expected a string, got " +
                                     std::string(value.type_name()));
                }
                (key == "file" ? file : prefix) = value.get<std::string>();
            } else if (key == "layout") {
                if (!value.is_null()) {
                    layout = parse_layout(value);
                }
            } else {
                throw InputError("params: unknown field " + quote_name(key) +
                                 " of a checkpoint (expected file, prefix, layout)");
            }
        }
        if (!params.contains("file")) {
            throw InputError("params: a checkpoint needs \"file\" (the .safetensors path)");
        }
    } else {
        throw InputError("params: expected the path of a .safetensors file or an object "
                         "{\"file\", \"prefix\", \"layout\"}, got " +
                         std::string(params.type_name()));
    }
    const fs::path p = file;
    const fs::path full = p.is_absolute() ? p : base / p;
    std::optional<SafetensorsFile> st;
    try {
        st.emplace(full);
    } catch (const InputError& e) {
        throw InputError(std::string("params: ") + e.what());
    }
    const std::string what = "params: " + st->shown();
    sources.push_back({"params", full, {}, std::nullopt, 0.0f});

    std::vector<std::string> names;
    for (const SafetensorsEntry& e : st->header().tensors) {
        names.push_back(e.name);
    }
    std::vector<const LayoutInfo*> candidates;
    for (const LayoutInfo& info : layouts()) {
        if (!layout || info.layout == *layout) {
            candidates.push_back(&info);
        }
    }
    auto found_at = [&](const std::string& pre) {
        std::vector<ParamsLayout> found = detect_layouts(names_at(names, pre));
        if (layout) {
            const bool ok = std::find(found.begin(), found.end(), *layout) != found.end();
            found.assign(ok ? 1 : 0, *layout);
        }
        return found;
    };
    std::vector<ParamsLayout> found = found_at(prefix);
    if (found.empty() && !prefix.empty() && prefix.back() != '.' &&
        !found_at(prefix + ".").empty()) {
        prefix += '.';
        found = found_at(prefix);
    }
    if (found.empty()) {
        std::string looked;
        for (const LayoutInfo* info : candidates) {
            for (const std::string_view sig : info->signatures) {
                looked += (looked.empty() ? "" : ", ") + std::string(sig);
            }
        }
        std::string message =
            what + ": no " + (layout ? std::string(layout_name(*layout)) + " " : "") +
            "attention weights at prefix " + quote_name(prefix) + " (looked for " + looked + ")";
        const std::set<std::string> elsewhere = prefixes_with(names, candidates);
        if (!elsewhere.empty()) {
            message += "; the file has them at prefix ";
            std::size_t shown = 0;
            for (const std::string& pre : elsewhere) {
                if (shown == 3) {
                    message += ", ...";
                    break;
                }
                message += (shown > 0 ? ", " : "") + quote_name(pre);
                ++shown;
            }
            if (elsewhere.size() > 1) {
                message += " (" + std::to_string(elsewhere.size()) + " prefixes)";
            }
            message += ": set \"prefix\"";
        } else {
            message += "; the file's " + std::to_string(names.size()) + " tensors hold none";
        }
        throw InputError(message);
    }
    if (found.size() > 1) {
        std::string list;
        for (const ParamsLayout l : found) {
            list += (list.empty() ? "" : " and ") + std::string(layout_name(l));
        }
        throw InputError(what + ": the tensors at prefix " + quote_name(prefix) +
                         " match the layouts " + list + ": set \"layout\"");
    }
    const ParamsLayout chosen = found.front();
    std::map<std::string, Array> tensors;
    for (const std::string_view key : layout_info(chosen).tensors) {
        const SafetensorsEntry* e = st->header().find(prefix + std::string(key));
        if (e == nullptr) {
            continue;
        }
        Array a;
        try {
            a = st->read(*e);
        } catch (const InputError& err) {
            throw InputError(std::string("params: ") + err.what());
        }
        ProblemSource s{"params." + e->name, full, a.shape, std::nullopt, 0.0f};
        note_first_nonfinite(a, s);
        sources.push_back(std::move(s));
        tensors.emplace(std::string(key), std::move(a));
    }
    return map_layout(chosen, tensors, what, prefix);
}

std::size_t implied_num_kv_heads(const Projections& projections, std::size_t num_heads) {
    if (!projections.w_q || !projections.w_k || num_heads == 0) {
        return num_heads;
    }
    const std::size_t q_rows = projections.w_q->shape()[0];
    const std::size_t k_rows = projections.w_k->shape()[0];
    if (q_rows == k_rows || q_rows % num_heads != 0) {
        return num_heads;
    }
    const std::size_t head_dim = q_rows / num_heads;
    if (head_dim == 0 || k_rows % head_dim != 0) {
        return num_heads;
    }
    const std::size_t kv_heads = k_rows / head_dim;
    return kv_heads > 0 && num_heads % kv_heads == 0 ? kv_heads : num_heads;
}

} // namespace attn::io
