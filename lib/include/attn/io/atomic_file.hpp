// Outputs written whole or not at all (a temp file renamed into place), and the signal
// handlers that remove the temp files of an interrupted run.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace attn::io {

/// True for an existing device or pipe (/dev/null, /dev/stdout, a FIFO): such outputs are
/// written in place, not through a temp file and a rename, and need no file extension.
bool written_in_place(const std::string& path);

/// Writes bytes to `path` whole or not at all: a sibling temp file, then a rename; the
/// temp file is removed on any failure and an existing file is left untouched. Whole or
/// not at all if the process dies at any point; not synced to the disk (no fsync: a power
/// loss right after may lose it, as with np.save; AtomicWriter::commit says why).
/// "-" writes to stdout; devices and FIFOs (which a rename cannot replace) are written in
/// place. Throws SystemError("PATH: cannot write: REASON").
void write_file_atomic(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);
void write_file_atomic(const std::filesystem::path& path, std::string_view text);

/// A regular file written whole or not at all, in pieces: the constructor creates a sibling
/// temp file (".NAME.tmp.XXXXXX"), write() appends to it, commit() renames it
/// over `path` (through a symlink, over the file it points to). Destroyed uncommitted, or
/// after any failure, it removes the temp file and leaves `path` untouched. While it
/// exists, the temp file is registered for install_signal_cleanup().
/// Throws SystemError("PATH: cannot write: REASON").
///
/// Example:
///     io::AtomicWriter out("big.npy");
///     out.write(header);
///     out.write(payload);
///     out.commit();
class AtomicWriter {
  public:
    /// `unnamed`: the temp file has no name until commit() (Linux's O_TMPFILE, where the
    /// file system has it; else a named temp as without), so even a run killed by SIGKILL
    /// leaves nothing behind.
    explicit AtomicWriter(const std::filesystem::path& path, bool unnamed = false);
    AtomicWriter(const AtomicWriter&) = delete;
    AtomicWriter& operator=(const AtomicWriter&) = delete;
    ~AtomicWriter();

    void write(std::span<const std::uint8_t> bytes);
    void commit();

    /// Sizes the file to `size` bytes, its blocks reserved now: a full disk or
    /// RLIMIT_FSIZE fails here, with the usual message, not part-way through the work.
    void reserve(std::size_t size);
    /// Writes `bytes` at `offset` (pwrite: the file position is untouched), from any
    /// number of threads at once for disjoint ranges; within what reserve() reserved, a
    /// full disk cannot stop it. Never throws: a failure is kept, and commit() fails with
    /// the first one (the temp file removed, `path` untouched).
    void write_at(std::size_t offset, std::span<const std::uint8_t> bytes) noexcept;

    /// The temp file being written (empty once committed or abandoned).
    const std::string& temp_path() const { return temp_; }

  private:
    [[noreturn]] void fail(int err);
    void abandon() noexcept;

    std::string shown_;  ///< the path as the user gave it, for messages
    std::string target_; ///< what the rename replaces
    std::string dir_;    ///< the folder (where an unnamed temp file is made)
    std::string temp_;
    int fd_ = -1;
    int slot_ = -1;                      ///< signal-cleanup registration, -1 if none
    bool unnamed_ = false;               ///< fd_ is an O_TMPFILE, linked into dir_ by commit()
    std::atomic<int> write_at_error_{0}; ///< write_at()'s first failure (an errno), 0 if none

    std::string temp_name() const;
    void open_named();
    void link_unnamed();
};

/// Installs SIGINT, SIGTERM and SIGHUP handlers that remove the temp files of the
/// AtomicWriters in progress (write_file_atomic uses one), then re-raise the signal with
/// its default action, so the exit status still says "killed by SIGINT". Signals the
/// process ignores (nohup) stay ignored. Also ignores SIGXFSZ, so a write beyond
/// RLIMIT_FSIZE fails with EFBIG (and is cleaned up) instead of killing the process.
/// The handlers only call unlink() and raise() (async-signal-safe); registration is
/// lock-free. Call once, early in main(). SIGKILL cannot be handled: nothing can clean
/// up after it.
void install_signal_cleanup();

} // namespace attn::io
