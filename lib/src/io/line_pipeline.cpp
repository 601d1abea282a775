// The JSON Lines machinery of `attn batch`: input, reader, writer, and the inline and
// ordered parallel runs. What a line computes is the caller's LineHandler.
#include "attn/io/line_pipeline.hpp"

#include "attn/error.hpp"
#include "attn/io/json_lines.hpp"
#include "attn/io/limits.hpp"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <fcntl.h>
#include <mutex>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace attn::io {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail_stdout() {
    throw SystemError(std::string("<stdout>: cannot write: ") +
                      std::strerror(errno != 0 ? errno : EIO));
}

/// --jobs 1: read, compute, write, flush, one line at a time on this thread.
void run_inline(LineReader& reader, LineWriter& writer, const LineHandler& handle) {
    std::string line;
    std::uint64_t line_no = 0;
    while (reader.next(line)) {
        ++line_no;
        if (reader.overlong() > 0) {
            writer.write(overlong_line(line_no, reader.overlong(), reader.max_line()));
        } else if (!blank_line(line)) {
            writer.write(handle(line, line_no));
        } else {
            continue;
        }
        writer.flush();
    }
}

/// --jobs N > 1: this thread reads and hands out lines, N workers compute them, and one
/// writer thread writes results in input order. A line may start only while fewer than
/// `window` lines are read but not yet written, which bounds memory; the writer flushes
/// whenever the next result is not ready yet, so every finished line reaches the reader
/// of our output promptly.
class Pipeline {
  public:
    Pipeline(unsigned jobs, std::uint64_t max_line, const LineHandler& handle, LineWriter& writer)
        : jobs_(jobs), window_(std::max<std::size_t>(16, std::size_t{8} * jobs)),
          max_line_(max_line), handle_(handle), writer_(writer), slots_(window_) {}

    void run(LineReader& reader) {
        std::vector<std::thread> workers;
        workers.reserve(jobs_);
        for (unsigned w = 0; w < jobs_; ++w) {
            workers.emplace_back([this] { work(); });
        }
        std::thread writer_thread([this] { write(); });

        std::exception_ptr read_error;
        try {
            std::string line;
            std::uint64_t line_no = 0;
            while (reader.next(line)) {
                ++line_no;
                if (reader.overlong() == 0 && blank_line(line)) {
                    continue;
                }
                // At most window_ lines in flight, and at most max_line bytes of their text
                // (one line alone may always go): memory stays bounded by the limit, not by
                // window_ times it.
                const std::uint64_t size = line.size();
                std::unique_lock<std::mutex> lock(mutex_);
                space_.wait(lock, [this, size] {
                    return (next_seq_ - next_write_ < window_ &&
                            (inflight_bytes_ + size <= max_line_ || next_seq_ == next_write_)) ||
                           abort_;
                });
                if (abort_) {
                    break;
                }
                inflight_bytes_ += size;
                slot(next_seq_).bytes = size;
                tasks_.push_back({next_seq_++, line_no, reader.overlong(), std::move(line)});
                line = std::string();
                lock.unlock();
                task_ready_.notify_one();
            }
        } catch (...) {
            // Finish and write what was read, then report the read error.
            read_error = std::current_exception();
        }
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            input_done_ = true;
        }
        task_ready_.notify_all();
        result_ready_.notify_all();
        for (auto& t : workers) {
            t.join();
        }
        writer_thread.join();
        if (write_error_) {
            std::rethrow_exception(write_error_);
        }
        if (read_error) {
            std::rethrow_exception(read_error);
        }
    }

  private:
    struct Task {
        std::uint64_t seq;
        std::uint64_t line_no;
        std::uint64_t overlong; ///< the length of a line too long to hold, else 0
        std::string line;
    };
    struct Slot {
        LineResult result;
        bool ready = false;
        std::uint64_t bytes = 0; ///< the length of the line's text, held until it is written
    };

    Slot& slot(std::uint64_t seq) { return slots_[seq % window_]; }

    void work() {
        for (;;) {
            std::unique_lock<std::mutex> lock(mutex_);
            task_ready_.wait(lock, [this] { return !tasks_.empty() || input_done_ || abort_; });
            if (abort_ || tasks_.empty()) {
                return; // input_done_ and nothing left
            }
            Task task = std::move(tasks_.front());
            tasks_.pop_front();
            lock.unlock();

            LineResult r = task.overlong > 0 ? overlong_line(task.line_no, task.overlong, max_line_)
                                             : handle_(task.line, task.line_no);

            lock.lock();
            slot(task.seq).result = std::move(r);
            slot(task.seq).ready = true;
            const bool next_in_line = task.seq == next_write_;
            lock.unlock();
            if (next_in_line) {
                result_ready_.notify_one();
            }
        }
    }

    void write() {
        bool unflushed = false;
        try {
            for (;;) {
                std::unique_lock<std::mutex> lock(mutex_);
                if (!slot(next_write_).ready && unflushed) {
                    lock.unlock();
                    writer_.flush();
                    unflushed = false;
                    lock.lock();
                }
                result_ready_.wait(lock, [this] {
                    return slot(next_write_).ready || (input_done_ && next_write_ == next_seq_) ||
                           abort_;
                });
                if (abort_ || !slot(next_write_).ready) {
                    break;
                }
                Slot& s = slot(next_write_);
                LineResult r = std::move(s.result);
                s.result = LineResult{};
                s.ready = false;
                lock.unlock();

                writer_.write(r);
                unflushed = true;

                lock.lock();
                inflight_bytes_ -= slot(next_write_).bytes;
                slot(next_write_).bytes = 0;
                ++next_write_;
                lock.unlock();
                space_.notify_one();
            }
            if (unflushed) {
                writer_.flush();
            }
        } catch (...) {
            {
                const std::lock_guard<std::mutex> lock(mutex_);
                write_error_ = std::current_exception();
                abort_ = true;
            }
            task_ready_.notify_all();
            space_.notify_all();
        }
    }

    const unsigned jobs_;
    const std::size_t window_;
    const std::uint64_t max_line_;
    const LineHandler& handle_;
    LineWriter& writer_;

    std::mutex mutex_;
    std::condition_variable task_ready_, result_ready_, space_;
    std::deque<Task> tasks_;
    std::vector<Slot> slots_;
    std::uint64_t next_seq_ = 0;       ///< sequence number of the next line read
    std::uint64_t next_write_ = 0;     ///< sequence number of the next line to write
    std::uint64_t inflight_bytes_ = 0; ///< text of the lines read and not yet written
    bool input_done_ = false;
    bool abort_ = false; ///< a write failed: stop everything
    std::exception_ptr write_error_;
};

} // namespace

LineInput::LineInput(const std::string& file) : base(fs::current_path()) {
    if (!file.empty() && file != "-") {
        name = file;
        do {
            fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
        } while (fd < 0 && errno == EINTR);
        if (fd < 0) {
            throw InputError::cannot_read(file, errno);
        }
        owned = true;
        base = fs::absolute(file).parent_path();
    }
    struct stat st {};
    if (::fstat(fd, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            close_fd();
            throw InputError::cannot_read(name, EISDIR);
        }
        if (S_ISREG(st.st_mode) && st.st_size > 0) {
            const off_t at = ::lseek(fd, 0, SEEK_CUR);
            size = static_cast<std::uint64_t>(st.st_size - (at > 0 ? at : 0));
        }
    }
}
LineInput::~LineInput() {
    close_fd();
}

void LineInput::close_fd() {
    if (owned) {
        ::close(fd);
        owned = false;
    }
}

LineReader::LineReader(int fd, std::string name, std::uint64_t max_line)
    : fd_(fd), name_(std::move(name)), max_line_(max_line), buf_(1u << 20) {}

bool LineReader::next(std::string& line) {
    line.clear();
    overlong_ = 0;
    std::uint64_t length = 0;
    for (;;) {
        if (pos_ < end_) {
            const char* start = buf_.data() + pos_;
            const std::size_t avail = end_ - pos_;
            const void* nl = std::memchr(start, '\n', avail);
            const std::size_t n =
                nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - start)
                              : avail;
            length += n;
            if (length > max_line_) {
                overlong_ = length;
                line.clear();
                line.shrink_to_fit();
            } else {
                line.append(start, n);
            }
            const std::size_t used = nl != nullptr ? n + 1 : n;
            pos_ += used;
            consumed_.fetch_add(used, std::memory_order_relaxed);
            if (nl != nullptr) {
                return true;
            }
        }
        if (eof_) {
            return length > 0;
        }
        ssize_t n = 0;
        do {
            n = ::read(fd_, buf_.data(), buf_.size());
        } while (n < 0 && errno == EINTR);
        if (n < 0) {
            throw InputError::cannot_read(name_, errno);
        }
        pos_ = 0;
        end_ = static_cast<std::size_t>(n);
        eof_ = n == 0;
    }
}

LineResult overlong_line(std::uint64_t line_no, std::uint64_t length, std::uint64_t limit) {
    return {json_error_line(nlohmann::json(),
                            "line " + std::to_string(line_no) + ": " + format_size(length) +
                                " long, more than the memory limit of " + format_size(limit) +
                                ": skipped") +
                "\n",
            line_no,
            true,
            false};
}

void LineWriter::write(const LineResult& r) {
    if (std::fwrite(r.text.data(), 1, r.text.size(), stdout) != r.text.size()) {
        fail_stdout();
    }
    ++done_;
    if (r.failed) {
        ++failed_;
    }
    if (r.noted) {
        if (noted_ == 0) {
            first_noted_line_ = r.line_no;
        }
        ++noted_;
    }
    for (const std::string& w : r.warnings) {
        if (warnings_.size() < max_warnings) {
            warnings_.push_back("line " + std::to_string(r.line_no) + ": " + w);
        }
        ++warning_count_;
    }
    if (progress_) {
        progress_(done_, failed_);
    }
}

void LineWriter::flush() {
    if (std::fflush(stdout) != 0) {
        fail_stdout();
    }
}

void run_lines(LineReader& reader, LineWriter& writer, unsigned jobs, const LineHandler& handle) {
    if (jobs <= 1) {
        run_inline(reader, writer, handle);
    } else {
        Pipeline(jobs, reader.max_line(), handle, writer).run(reader);
    }
}

} // namespace attn::io
