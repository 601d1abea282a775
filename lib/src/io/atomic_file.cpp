// Whole-or-nothing file writes: a sibling temp file, then a rename; stdout, devices and
// FIFOs written in place.
#include "attn/io/atomic_file.hpp"

#include "attn/error.hpp"
#include "attn/io/detail.hpp"
#include "attn/io/number_text.hpp"
#include "signal_cleanup.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attn::io {
namespace detail {

[[noreturn]] void throw_write_error(const std::string& path, int err) {
    throw SystemError(message_text(path, 4096) +
                      ": cannot write: " + errno_text(err != 0 ? err : EIO));
}

namespace {

namespace fs = std::filesystem;

/// Writes everything to fd, retrying partial writes and EINTR. Returns 0 or an errno.
int write_all(int fd, std::span<const std::uint8_t> bytes) {
    constexpr std::size_t max_chunk = std::size_t{1} << 30;
    std::size_t done = 0;
    while (done < bytes.size()) {
        const std::size_t chunk = std::min(bytes.size() - done, max_chunk);
        const ssize_t n = ::write(fd, bytes.data() + done, chunk);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno;
        }
        if (n == 0) {
            return ENOSPC; // a regular file that takes nothing is full
        }
        done += static_cast<std::size_t>(n);
    }
    return 0;
}

/// Six characters for a temp file name. Uniqueness is enforced by O_EXCL, not by this.
std::string temp_suffix() {
    static std::atomic<std::uint64_t> counter{0};
    std::uint64_t x =
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
        (static_cast<std::uint64_t>(::getpid()) << 32) ^
        (counter.fetch_add(1) * 0x9e3779b97f4a7c15ULL);
    // splitmix64 finaliser
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    static constexpr char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    std::string out;
    for (int i = 0; i < 6; ++i) {
        out += alphabet[x % 62];
        x /= 62;
    }
    return out;
}

/// stdout, for the path "-".
void write_stdout(std::span<const std::uint8_t> bytes) {
    errno = 0;
    if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size()) {
        throw_write_error("stdout", errno);
    }
    if (std::fflush(stdout) != 0) {
        throw_write_error("stdout", errno);
    }
}

/// Devices and pipes (/dev/null, /dev/stdout, a FIFO) cannot be replaced by a rename and
/// have no partial-file problem: write to them directly.
void write_special(const std::string& path, std::span<const std::uint8_t> bytes) {
    int fd = -1;
    do {
        fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        throw_write_error(path, errno);
    }
    const int err = write_all(fd, bytes);
    if (err != 0) {
        ::close(fd);
        throw_write_error(path, err);
    }
    if (::close(fd) != 0) {
        throw_write_error(path, errno);
    }
}

} // namespace
} // namespace detail

using namespace detail;

bool written_in_place(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode);
}

AtomicWriter::AtomicWriter(const std::filesystem::path& path, bool unnamed)
    : shown_(path.string()) {
    struct stat st {};
    if (::stat(shown_.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            throw_write_error(shown_, EISDIR);
        }
        if (!S_ISREG(st.st_mode)) {
            // A rename would replace the device or FIFO itself (as root, even /dev/null).
            throw SystemError(message_text(shown_, 4096) + ": cannot write: not a regular file");
        }
    }
    if (path.filename().empty()) {
        throw_write_error(shown_, EISDIR); // "out/"
    }
    // Through a symlink, replace the file it points to, not the link itself (as `>` does).
    fs::path target = path;
    struct stat link {};
    if (::lstat(shown_.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
        std::error_code ec;
        fs::path resolved = fs::weakly_canonical(path, ec);
        if (!ec && !resolved.filename().empty()) {
            target = std::move(resolved);
        }
    }
    target_ = target.string();
    const fs::path dir = target.parent_path();
    dir_ = dir.empty() ? std::string(".") : dir.string();
    if (unnamed) {
        // Mode 0666: the kernel applies the umask, as for a named temp below.
        do {
            fd_ = ::open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
        } while (fd_ < 0 && errno == EINTR);
        if (fd_ >= 0) {
            unnamed_ = true;
            return;
        }
        if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
            throw_write_error(shown_, errno);
        }
    }
    open_named();
}

std::string AtomicWriter::temp_name() const {
    // Cut long names so that the temp name stays within NAME_MAX when the target's does.
    const std::string file_name = fs::path(target_).filename().string().substr(0, 200);
    return (fs::path(dir_) / ("." + file_name + ".tmp." + temp_suffix())).string();
}

void AtomicWriter::open_named() {
    // A sibling temp file, created exclusively with mode 0666 so that the kernel applies
    // the umask (and any default ACL) itself: no racy umask() read-and-restore needed.
    // Its name is armed for the cleanup signals before the file exists: a signal taken by
    // another thread between the open and the arming would otherwise leave it behind (this
    // thread also blocks them meanwhile).
    const CleanupSignalsBlocked blocked;
    std::string temp;
    for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
        temp = temp_name();
        slot_ = arm_temp(temp);
        do {
            fd_ = ::open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);
        } while (fd_ < 0 && errno == EINTR);
        if (fd_ < 0) {
            const int err = errno;
            disarm_temp(slot_);
            slot_ = -1;
            if (err != EEXIST) {
                throw_write_error(shown_, err);
            }
        }
    }
    if (fd_ < 0) {
        throw_write_error(shown_, EEXIST);
    }
    temp_ = std::move(temp);
}

void AtomicWriter::link_unnamed() {
    // The unnamed file gets a temp name first (linkat cannot replace), then the rename.
    const std::string proc = "/proc/self/fd/" + std::to_string(fd_);
    const CleanupSignalsBlocked blocked;
    for (int attempt = 0; attempt < 100; ++attempt) {
        std::string temp = temp_name();
        slot_ = arm_temp(temp);
        if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, temp.c_str(), AT_SYMLINK_FOLLOW) == 0) {
            temp_ = std::move(temp);
            unnamed_ = false;
            return;
        }
        const int err = errno;
        disarm_temp(slot_);
        slot_ = -1;
        if (err != EEXIST) {
            fail(err);
        }
    }
    fail(EEXIST);
}

AtomicWriter::~AtomicWriter() {
    abandon();
}

void AtomicWriter::abandon() noexcept {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
    if (!temp_.empty()) {
        const CleanupSignalsBlocked blocked;
        ::unlink(temp_.c_str());
        disarm_temp(slot_);
        slot_ = -1;
        temp_.clear();
    }
}

void AtomicWriter::fail(int err) {
    abandon();
    throw_write_error(shown_, err);
}

void AtomicWriter::reserve(std::size_t size) {
    if (fd_ < 0) {
        throw SystemError(message_text(shown_, 4096) +
                          ": cannot write: the file is already committed or abandoned");
    }
    // posix_fallocate returns the error (EFBIG past RLIMIT_FSIZE, ENOSPC), not errno.
    if (size > 0) {
        if (const int err = ::posix_fallocate(fd_, 0, static_cast<off_t>(size)); err != 0) {
            fail(err);
        }
    }
}

void AtomicWriter::write_at(std::size_t offset, std::span<const std::uint8_t> bytes) noexcept {
    std::size_t done = 0;
    while (done < bytes.size() && write_at_error_.load(std::memory_order_relaxed) == 0) {
        const ssize_t n = ::pwrite(
            fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
        if (n > 0) {
            done += static_cast<std::size_t>(n);
            continue;
        }
        const int err = n == 0 ? ENOSPC : errno; // a regular file that takes nothing is full
        if (n < 0 && err == EINTR) {
            continue;
        }
        int none = 0;
        write_at_error_.compare_exchange_strong(none, err);
    }
}

void AtomicWriter::write(std::span<const std::uint8_t> bytes) {
    if (fd_ < 0) {
        throw SystemError(message_text(shown_, 4096) +
                          ": cannot write: the file is already committed or abandoned");
    }
    if (const int err = write_all(fd_, bytes); err != 0) {
        fail(err);
    }
}

void AtomicWriter::commit() {
    if (fd_ < 0) {
        throw SystemError(message_text(shown_, 4096) +
                          ": cannot write: the file is already committed or abandoned");
    }
    if (const int err = write_at_error_.load(); err != 0) {
        fail(err);
    }
    // No fsync, of the file or of the folder (the rule for every output, here): "whole or
    // not at all" holds against the process dying at any point (SIGKILL, a crash, a full
    // disk) through the temp file and the rename alone. fsync adds durability against a
    // power loss or an OS crash right after the run, at the price of waiting for the disk:
    // 0.1-0.7 s of a 1.6-3 s run writing 512 MB of weights, 12.6 s for 512 MB while the
    // disk was busy (measured, docs/performance.md), a wait np.save, torch.save, cp and a
    // shell's `>` do not make either. Who needs durability runs `sync FILE` afterwards.
    if (unnamed_) {
        link_unnamed();
    }
    const int closed = ::close(fd_);
    fd_ = -1; // closed even when close() fails: never close twice
    if (closed != 0) {
        fail(errno);
    }
    {
        const CleanupSignalsBlocked blocked;
        if (::rename(temp_.c_str(), target_.c_str()) != 0) {
            const int err = errno;
            fail(err);
        }
        disarm_temp(slot_);
        slot_ = -1;
        temp_.clear();
    }
}

void write_file_atomic(const std::filesystem::path& path, std::span<const std::uint8_t> bytes) {
    const std::string shown = path.string();
    if (shown == "-") {
        write_stdout(bytes);
        return;
    }
    if (written_in_place(shown)) {
        write_special(shown, bytes);
        return;
    }
    AtomicWriter out(path);
    out.write(bytes);
    out.commit();
}

void write_file_atomic(const std::filesystem::path& path, std::string_view text) {
    write_file_atomic(path,
                      std::span<const std::uint8_t>(
                          reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

} // namespace attn::io
