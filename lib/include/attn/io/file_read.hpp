// Reading a whole file within the memory limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attn::io {

/// An open file descriptor, closed when its owner goes (movable, not copyable); -1: none.
class Fd {
  public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Fd& operator=(Fd&& other) noexcept {
        std::swap(fd_, other.fd_);
        return *this;
    }
    ~Fd() { close(); }

    int get() const { return fd_; }
    /// Closes the descriptor now (nothing when there is none).
    void close() noexcept;

  private:
    int fd_ = -1;
};

/// A regular file mapped read-only, for reading a large input in place (no copy in the
/// process's memory; pages come from the page cache as they are read). Not copyable.
/// Throws InputError("PATH: cannot read: REASON"), also for anything but a regular file.
/// A file that shrinks while mapped (another process truncates it) does not end the
/// process: the pages past its new end read as zeros, and check_unchanged() says so.
class MappedFile {
  public:
    explicit MappedFile(const std::filesystem::path& path);
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    ~MappedFile();

    std::span<const std::uint8_t> bytes() const { return {data_, size_}; }
    /// Drops the whole pages inside [offset, offset + length) from this process (read
    /// again from the page cache if touched later): memory stays bounded by what is being
    /// read, not by the file.
    void release(std::size_t offset, std::size_t length) const noexcept;
    /// Throws InputError("PATH: changed while it was being read ...") when a read of the
    /// mapping went past the file's end since it was mapped (what bytes() gave there were
    /// zeros, not the file's): a reader calls it before it trusts or writes what it read.
    void check_unchanged() const;

  private:
    std::string shown_;
    const std::uint8_t* data_ = nullptr;
    std::size_t size_ = 0;
    int guard_ = -1; ///< the mapping's slot in the SIGBUS guard, or -1
};

/// True when `path` ends in `ext` (".gguf", lower case), compared case-insensitively: the
/// one test of a file name's extension.
bool has_extension(std::string_view path, std::string_view ext);

/// True for an existing regular file (what MappedFile maps).
bool is_regular_file(const std::filesystem::path& path);

/// Reads all bytes of a file. A file larger than memory_limit() (attn/io/limits.hpp) is
/// refused before anything is read: by its size for regular files, as the bytes arrive
/// for pipes and devices. Throws InputError("PATH: cannot read: REASON").
std::vector<std::uint8_t> read_file(const std::filesystem::path& path);

} // namespace attn::io
