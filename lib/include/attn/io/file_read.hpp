// Reading a whole file within the memory limit.
#pragma once

#include <cstdint>
#include <filesystem>
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

/// Reads all bytes of a file. A file larger than memory_limit() (attn/io/limits.hpp) is
/// refused before anything is read: by its size for regular files, as the bytes arrive
/// for pipes and devices. Throws InputError("PATH: cannot read: REASON").
std::vector<std::uint8_t> read_file(const std::filesystem::path& path);

} // namespace attn::io
