// The JSON Lines machinery of `attn batch`, generic over what a line computes: the input
// (a file or stdin), its reader (lines read in chunks as they arrive, a line over the
// memory limit skipped unread), the writer of result lines on stdout with the counts, and
// the run: inline (--jobs 1) or the ordered parallel pipeline (--jobs N), which writes
// results in input order with a bounded window of lines in flight.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace attn::io {

/// The input: FILE, or stdin for "" and "-"; its folder (relative paths in lines resolve
/// against it), and its size when it is a regular file. Throws InputError("FILE: cannot
/// read: ...").
struct LineInput {
    int fd = 0; ///< stdin (STDIN_FILENO) unless a FILE is opened
    bool owned = false;
    std::string name = "<stdin>";
    std::filesystem::path base;
    std::uint64_t size = 0; ///< 0: unknown

    explicit LineInput(const std::string& file);
    ~LineInput();
    LineInput(const LineInput&) = delete;
    LineInput& operator=(const LineInput&) = delete;

  private:
    void close_fd();
};

/// Lines from a file descriptor, read in 1 MiB chunks: no line is ever held twice, and
/// nothing beyond the current chunk and line is kept. A line longer than `max_line` bytes
/// is not kept either: it is read to its end and reported by overlong().
class LineReader {
  public:
    LineReader(int fd, std::string name, std::uint64_t max_line);

    /// The next line without its '\n'; false at the end of the input. A last line
    /// without '\n' counts. An overlong line comes back empty, with overlong() giving its
    /// length. Throws InputError when the read fails.
    bool next(std::string& line);

    /// The length of the line next() just skipped for being longer than max_line, else 0.
    std::uint64_t overlong() const { return overlong_; }
    std::uint64_t max_line() const { return max_line_; }

    /// Bytes consumed so far (any thread may ask).
    std::uint64_t bytes_read() const { return consumed_.load(std::memory_order_relaxed); }

  private:
    int fd_;
    std::string name_;
    std::uint64_t max_line_;
    std::vector<char> buf_;
    std::size_t pos_ = 0, end_ = 0;
    bool eof_ = false;
    std::uint64_t overlong_ = 0;
    std::atomic<std::uint64_t> consumed_{0};
};

/// One line's answer, ready to write.
struct LineResult {
    std::string text; ///< the output line, with its '\n'
    std::uint64_t line_no = 0;
    bool failed = false;
    bool noted = false; ///< counted by LineWriter::noted() (batch: fully masked rows)
    std::vector<std::string> warnings{}; ///< likely mistakes in the line, one line each
};

/// The answer for a line too long to hold: the error line (null id) "line N: SIZE long,
/// more than the memory limit of LIMIT: skipped".
LineResult overlong_line(std::uint64_t line_no, std::uint64_t length, std::uint64_t limit);

/// Writes result lines to stdout in the order it is given them, and keeps the counts.
/// `progress`, when set, is called after each line with the lines done and failed.
/// Throws SystemError("<stdout>: cannot write: ...").
class LineWriter {
  public:
    using Progress = std::function<void(std::uint64_t done, std::uint64_t failed)>;
    explicit LineWriter(Progress progress = {}) : progress_(std::move(progress)) {}

    void write(const LineResult& r);
    void flush();

    std::uint64_t done() const { return done_; }
    std::uint64_t failed() const { return failed_; }
    std::uint64_t noted() const { return noted_; }
    std::uint64_t first_noted_line() const { return first_noted_line_; }
    /// The lines' warnings in line order as "line N: MESSAGE", the first max_warnings of
    /// them (a million-line batch with one mistake repeated must not flood stderr).
    const std::vector<std::string>& warnings() const { return warnings_; }
    /// How many warnings the lines had in all, kept or not.
    std::uint64_t warning_count() const { return warning_count_; }
    static constexpr std::size_t max_warnings = 20;

  private:
    Progress progress_;
    std::uint64_t done_ = 0, failed_ = 0, noted_ = 0, first_noted_line_ = 0;
    std::vector<std::string> warnings_;
    std::uint64_t warning_count_ = 0;
};

/// What a line computes: its result line. Called from worker threads at once (jobs > 1);
/// it must not throw (a failure is an error line: json_error_line).
using LineHandler = std::function<LineResult(const std::string& line, std::uint64_t line_no)>;

/// Reads every line, skips blank ones, hands the others to `handle` (an overlong line
/// becomes overlong_line instead) and writes the results in input order. jobs == 1:
/// read, compute, write and flush one line at a time on this thread. jobs > 1: this
/// thread reads, `jobs` workers compute, and a writer thread writes in input order; a
/// line may start only while fewer than max(16, 8 * jobs) lines are read but not yet
/// written, and their text stays within reader.max_line() bytes (one line alone may
/// always go), which bounds memory. The writer flushes whenever the next result is not
/// ready yet. Lines read before a read error are finished and written, then the error is
/// rethrown; a write error stops everything and is rethrown.
void run_lines(LineReader& reader, LineWriter& writer, unsigned jobs, const LineHandler& handle);

} // namespace attn::io
