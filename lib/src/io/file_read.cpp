// Reading files: whole (within the memory limit, also from pipes and devices) and by
// descriptor, with one-line errors naming the path.
#include "attn/io/file_read.hpp"

#include "attn/error.hpp"
#include "attn/huge_pages.hpp"
#include "attn/io/detail.hpp"
#include "attn/io/limits.hpp"
#include "map_guard.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attn::io {

void Fd::close() noexcept {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

namespace detail {

int open_for_reading(const std::string& file) {
    int fd = -1;
    do {
        fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        throw InputError::cannot_read(shown_path(file), errno);
    }
    return fd;
}

std::ptrdiff_t read_some(int fd, std::uint8_t* dst, std::size_t n) {
    std::size_t done = 0;
    while (done < n) {
        const ssize_t got = ::read(fd, dst + done, n - done);
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -static_cast<std::ptrdiff_t>(errno);
        }
        if (got == 0) {
            break;
        }
        done += static_cast<std::size_t>(got);
    }
    return static_cast<std::ptrdiff_t>(done);
}

void read_exactly(int fd, std::uint8_t* dst, std::size_t n, const std::string& shown) {
    const std::ptrdiff_t got = read_some(fd, dst, n);
    if (got < 0) {
        throw InputError::cannot_read(shown, static_cast<int>(-got));
    }
    if (static_cast<std::size_t>(got) != n) {
        throw InputError(shown + ": truncated: the file ended while it was read");
    }
}

void pread_exactly(
    int fd, std::uint8_t* dst, std::size_t n, std::uint64_t offset, const std::string& shown) {
    std::size_t done = 0;
    while (done < n) {
        const ssize_t got = ::pread(fd, dst + done, n - done, static_cast<off_t>(offset + done));
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            throw InputError::cannot_read(shown, errno);
        }
        if (got == 0) {
            throw InputError(shown + ": truncated: the file ended while it was read");
        }
        done += static_cast<std::size_t>(got);
    }
}

} // namespace detail

using namespace detail;

bool has_extension(std::string_view path, std::string_view ext) {
    if (path.size() < ext.size()) {
        return false;
    }
    const std::string_view tail = path.substr(path.size() - ext.size());
    return std::equal(tail.begin(), tail.end(), ext.begin(), [](char a, char b) {
        return (a >= 'A' && a <= 'Z' ? static_cast<char>(a - 'A' + 'a') : a) == b;
    });
}

bool is_regular_file(const std::filesystem::path& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

namespace {

/// A hook for the tests of a file truncated while mapped: with ATTN_TEST_MAPPED_PAUSE
/// naming a FIFO, the process's first mapping waits for one byte from it before anything
/// reads it.
void pause_for_tests() {
    static std::atomic<bool> paused{false};
    const char* fifo = std::getenv("ATTN_TEST_MAPPED_PAUSE"); // NOLINT(concurrency-mt-unsafe)
    if (fifo == nullptr || *fifo == '\0' || paused.exchange(true)) {
        return;
    }
    const Fd fd(::open(fifo, O_RDONLY | O_CLOEXEC));
    std::uint8_t byte = 0;
    if (fd.get() >= 0) {
        (void)read_some(fd.get(), &byte, 1);
    }
}

} // namespace

MappedFile::MappedFile(const std::filesystem::path& path) {
    const std::string file = path.string();
    const std::string shown = shown_path(file);
    shown_ = shown;
    const Fd fd(open_for_reading(file));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        throw InputError::cannot_read(shown, errno);
    }
    if (!S_ISREG(st.st_mode)) {
        throw InputError(shown + ": cannot read: not a regular file");
    }
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ == 0) {
        return;
    }
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (p == MAP_FAILED) {
        throw InputError::cannot_read(shown, errno);
    }
    data_ = static_cast<const std::uint8_t*>(p);
    guard_ = guard_mapping(data_, size_);
    pause_for_tests();
}

MappedFile::~MappedFile() {
    unguard_mapping(guard_);
    if (data_ != nullptr) {
        ::munmap(const_cast<std::uint8_t*>(data_), size_);
    }
}

void MappedFile::check_unchanged() const {
    if (mapping_faulted(guard_)) {
        throw InputError(shown_ + ": changed while it was being read (it shrank: another "
                                  "process truncated or rewrote it)");
    }
}

void MappedFile::release(std::size_t offset, std::size_t length) const noexcept {
    if (data_ == nullptr || offset >= size_) {
        return;
    }
    // The range's whole pages; a range that reaches the end of the file also takes the
    // file's last, partial page (the mapping ends there).
    const std::size_t end = std::min(size_, offset + length);
    const auto base = reinterpret_cast<std::uintptr_t>(data_);
    const PageRange pages = whole_pages(base + offset, end - offset);
    const std::uintptr_t last = end == size_ ? base + end : pages.end;
    if (pages.first < last) {
        // NOLINTNEXTLINE(performance-no-int-to-ptr): a page inside this object's mapping
        ::madvise(reinterpret_cast<void*>(pages.first), last - pages.first, MADV_DONTNEED);
    }
}

std::vector<std::uint8_t> read_file(const std::filesystem::path& path) {
    const std::string file = path.string();
    const std::string shown = shown_path(file);
    const Fd fd(open_for_reading(file));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        throw InputError::cannot_read(shown, errno);
    }
    if (S_ISDIR(st.st_mode)) {
        throw InputError::cannot_read(shown, EISDIR);
    }
    const std::uint64_t limit = memory_limit();
    auto too_big = [&](std::uint64_t size, const char* how) {
        return InputError(shown + ": cannot read: the file is " + how + format_size(size) +
                          ", more than the memory limit of " + format_size(limit) +
                          " (--max-memory)");
    };
    std::vector<std::uint8_t> out;
    if (S_ISREG(st.st_mode)) {
        const auto size = static_cast<std::uint64_t>(st.st_size);
        if (size > limit) {
            throw too_big(size, "");
        }
        out.reserve(static_cast<std::size_t>(size));
    }
    // Pipes and devices have no size: read in chunks, refusing them once over the limit.
    std::vector<std::uint8_t> buffer(std::size_t{1} << 16);
    for (;;) {
        const std::ptrdiff_t got = read_some(fd.get(), buffer.data(), buffer.size());
        if (got < 0) {
            throw InputError::cannot_read(shown, static_cast<int>(-got));
        }
        if (out.size() + static_cast<std::size_t>(got) > limit) {
            throw too_big(out.size() + static_cast<std::size_t>(got), "at least ");
        }
        out.insert(out.end(), buffer.begin(), buffer.begin() + got);
        if (static_cast<std::size_t>(got) < buffer.size()) {
            break;
        }
    }
    return out;
}

} // namespace attn::io
