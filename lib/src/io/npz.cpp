// The .npz reader: libzip opens the archive and inflates one member; its size is checked
// before the buffer exists, and the bytes go to the strict NPY reader. See npz.hpp.
#include "attn/io/npz.hpp"

#include "attn/error.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/limits.hpp"

#include <algorithm>
#include <sys/stat.h>
#include <zip.h>

namespace attn::io {

namespace {

/// The archive, opened read-only with libzip's consistency checks; closed on scope exit.
class Archive {
  public:
    /// From a source libzip takes over when opening succeeds (and that we free otherwise).
    Archive(zip_source_t* source, std::string_view name) : name_(name) {
        zip_error_t error;
        zip_error_init(&error);
        zip_ = zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error);
        if (zip_ == nullptr) {
            const std::string why = zip_error_strerror(&error);
            zip_error_fini(&error);
            zip_source_free(source);
            throw InputError(name_ + ": not a readable .npz (zip) archive: " + message_text(why));
        }
        zip_error_fini(&error);
    }
    Archive(const Archive&) = delete;
    Archive& operator=(const Archive&) = delete;
    ~Archive() { zip_discard(zip_); }

    std::vector<std::string> members() const {
        std::vector<std::string> out;
        const zip_int64_t n = zip_get_num_entries(zip_, 0);
        for (zip_int64_t i = 0; i < n; ++i) {
            const char* entry = zip_get_name(zip_, static_cast<zip_uint64_t>(i), 0);
            if (entry == nullptr) {
                continue;
            }
            std::string s = entry;
            if (s.size() > 4 && s.compare(s.size() - 4, 4, ".npy") == 0) {
                out.push_back(s.substr(0, s.size() - 4));
            }
        }
        return out;
    }

    std::vector<std::uint8_t> member_bytes(std::string_view member) const {
        if (member.empty()) {
            const std::vector<std::string> all = members();
            if (all.size() != 1) {
                throw InputError(name_ + ": the archive holds " + std::to_string(all.size()) +
                                 " arrays: name one as FILE.npz:NAME");
            }
            return member_bytes(all.front());
        }
        const std::string entry = std::string(member) + ".npy";
        const std::string shown = name_ + ":" + message_text(member);
        const zip_int64_t index = zip_name_locate(zip_, entry.c_str(), 0);
        if (index < 0) {
            std::string list;
            for (const std::string& m : members()) {
                list += (list.empty() ? "" : ", ") + message_text(m);
            }
            throw InputError(shown + ": no array '" + message_text(member) +
                             "' in the archive (it has: " + (list.empty() ? "none" : list) +
                             "; name one as FILE.npz:NAME)");
        }
        const auto idx = static_cast<zip_uint64_t>(index);
        zip_stat_t st;
        zip_stat_init(&st);
        if (zip_stat_index(zip_, idx, 0, &st) != 0 || (st.valid & ZIP_STAT_SIZE) == 0) {
            throw InputError(shown + ": corrupt archive: " + message_text(zip_strerror(zip_)));
        }
        if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) != 0 && st.encryption_method != ZIP_EM_NONE) {
            throw InputError(shown + ": encrypted archive members are not supported");
        }
        if ((st.valid & ZIP_STAT_COMP_METHOD) != 0 &&
            zip_compression_method_supported(static_cast<zip_int32_t>(st.comp_method), 0) == 0) {
            throw InputError(shown + ": unsupported compression method " +
                             std::to_string(st.comp_method) +
                             " (numpy writes stored or deflated members)");
        }
        // The declared size decides the allocation: refuse it before it exists. A zip bomb
        // declares a huge size for a few compressed bytes; one that lies about its size
        // is caught by the CRC and length checks while reading.
        const std::uint64_t limit = memory_limit();
        if (st.size > limit) {
            throw InputError(shown + ": the member is " + format_size(st.size) +
                             " uncompressed, more than the memory limit of " + format_size(limit) +
                             " (--max-memory)");
        }
        zip_file_t* file = zip_fopen_index(zip_, idx, 0);
        if (file == nullptr) {
            throw InputError(shown +
                             ": cannot read the member: " + message_text(zip_strerror(zip_)));
        }
        std::vector<std::uint8_t> bytes(static_cast<std::size_t>(st.size));
        std::size_t done = 0;
        std::string failure;
        while (done < bytes.size()) {
            const zip_int64_t got = zip_fread(file, bytes.data() + done, bytes.size() - done);
            if (got < 0) {
                failure = zip_error_strerror(zip_file_get_error(file));
                break;
            }
            if (got == 0) {
                failure = "the member ends after " + std::to_string(done) + " of " +
                          std::to_string(bytes.size()) + " bytes";
                break;
            }
            done += static_cast<std::size_t>(got);
        }
        if (failure.empty()) {
            // Reading past the declared end must give nothing (and makes libzip finish
            // its CRC check on members it streamed whole).
            std::uint8_t extra = 0;
            const zip_int64_t got = zip_fread(file, &extra, 1);
            if (got < 0) {
                failure = zip_error_strerror(zip_file_get_error(file));
            } else if (got > 0) {
                failure = "the member holds more than its declared " +
                          std::to_string(bytes.size()) + " bytes";
            }
        }
        zip_fclose(file);
        if (!failure.empty()) {
            throw InputError(shown + ": corrupt archive member: " + message_text(failure));
        }
        return bytes;
    }

  private:
    std::string name_;
    zip_t* zip_ = nullptr;
};

/// libzip opens an empty file as an empty archive; numpy never writes one (an archive with
/// no members still has its 22-byte end record), so it is refused as what it is.
void check_not_empty(std::uint64_t size, std::string_view name) {
    if (size == 0) {
        throw InputError(std::string(name) +
                         ": not a readable .npz (zip) archive: the file is empty");
    }
}

zip_source_t* buffer_source(std::span<const std::uint8_t> archive, std::string_view name) {
    check_not_empty(archive.size(), name);
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* source = zip_source_buffer_create(archive.data(), archive.size(), 0, &error);
    if (source == nullptr) {
        const std::string why = zip_error_strerror(&error);
        zip_error_fini(&error);
        throw InputError(std::string(name) + ": cannot read the archive: " + message_text(why));
    }
    zip_error_fini(&error);
    return source;
}

bool ends_with_npz(std::string_view s) {
    return has_extension(s, ".npz");
}

} // namespace

std::optional<NpzRef> parse_npz_ref(const std::string& path) {
    if (ends_with_npz(path)) {
        return NpzRef{path, ""};
    }
    // "x.npz:name": the last colon that follows ".npz" splits the file from the member.
    for (std::size_t colon = path.size(); colon-- > 0;) {
        if (path[colon] == ':' && ends_with_npz(std::string_view(path).substr(0, colon))) {
            return NpzRef{path.substr(0, colon), path.substr(colon + 1)};
        }
    }
    return std::nullopt;
}

std::string npz_member_for(const NpzRef& ref, std::string_view field) {
    if (!ref.member.empty()) {
        return ref.member;
    }
    const std::size_t dot = field.rfind('.');
    return std::string(dot == std::string_view::npos ? field : field.substr(dot + 1));
}

std::vector<std::string> npz_members(std::span<const std::uint8_t> archive, std::string_view name) {
    const Archive zip(buffer_source(archive, name), name);
    return zip.members();
}

std::vector<std::uint8_t> npz_member_bytes(std::span<const std::uint8_t> archive,
                                           std::string_view member,
                                           std::string_view name) {
    const Archive zip(buffer_source(archive, name), name);
    return zip.member_bytes(member);
}

Array read_npz_array(const std::filesystem::path& file,
                     std::string_view member,
                     Precision precision) {
    const std::string shown = message_text(file.string(), 4096);
    std::vector<std::uint8_t> bytes;
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        // A regular file: libzip reads the central directory and the one member in place,
        // so the archive itself is never held in memory.
        check_not_empty(static_cast<std::uint64_t>(st.st_size), shown);
        zip_error_t error;
        zip_error_init(&error);
        zip_source_t* source = zip_source_file_create(file.c_str(), 0, -1, &error);
        if (source == nullptr) {
            const std::string why = zip_error_strerror(&error);
            zip_error_fini(&error);
            throw InputError(shown + ": cannot read: " + message_text(why));
        }
        zip_error_fini(&error);
        bytes = Archive(source, shown).member_bytes(member);
    } else {
        // Missing files, pipes and devices: read_file gives the usual messages and limits.
        const std::vector<std::uint8_t> archive = read_file(file);
        bytes = npz_member_bytes(archive, member, shown);
    }
    return parse_npy(bytes, member.empty() ? shown : shown + ":" + message_text(member), precision);
}

} // namespace attn::io
