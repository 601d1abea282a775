// `attn batch [FILE]`: JSON Lines in, JSON Lines out, in input order. A line that fails
// becomes {"id": .., "error": ".."} and the run goes on; exit 1 if any line failed.
// Streaming: lines are read as they arrive, computed by --jobs workers, and written in
// order as soon as each is ready; at most a fixed window of lines is in flight, so memory
// stays bounded however long the input is. It never reads the whole input into memory.
#include "attn/error.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/limits.hpp"
#include "attn/problem/checks.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/solve.hpp"
#include "cli.hpp"
#include "compute_options.hpp"
#include "progress.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <fcntl.h>
#include <filesystem>
#include <memory>
#include <mutex>
#include <new>
#include <sched.h>
#include <string_view>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace attn::app {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct BatchArgs {
    std::string file;
    unsigned jobs = 0;    ///< 0: all cores
    unsigned threads = 0; ///< per problem; 0: cores / jobs (at least 1)
    bool no_weights = false;
    bool quiet = false;
    std::string max_memory;
    bool check_finite = false;
    // Defaults for every line (a line's own fields win).
    std::string variant, causal, scale, precision;
    std::size_t heads = 0, kv_heads = 0;
};

/// What every line shares.
struct LineContext {
    fs::path base;               ///< relative paths in lines resolve against this folder
    json defaults;               ///< fields set on every line that does not set them itself
    problem::SolveOptions solve; ///< weights or not, threads per problem
    std::uint64_t max_line = 0;  ///< longer lines are skipped (the memory limit)
    bool check_finite = false;   ///< --check-finite: NaN/inf inputs fail the line
};

/// One line's answer, ready to write.
struct LineResult {
    std::string text; ///< the output line, with its '\n'
    std::uint64_t line_no = 0;
    bool failed = false;
    std::int64_t rows_fully_masked = 0;
};

std::string dump(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

LineResult error_line(const json& id, std::uint64_t line_no, const std::string& message) {
    return {"{\"id\":" + dump(id) + ",\"error\":" + dump(json(message)) + "}\n", line_no, true, 0};
}

/// A fast path for parsing a batch line, which is mostly numbers: a strict recursive
/// parser that builds the same nlohmann::json as io::parse_json_text, converting numbers
/// with std::from_chars (correctly rounded, like the strtod nlohmann uses) instead of
/// nlohmann's per-character token buffer (on bench/batch/ that lexer took ~45% of the run,
/// this path takes ~20%). It handles the common subset only: on anything else (string
/// escapes, non-ASCII text, numbers out of range, nesting deeper than 32 levels, or any
/// syntax error) it gives up, and the caller parses the line with io::parse_json_text,
/// which then decides and words the error. So it never accepts what io::parse_json_text
/// rejects, as long as that adds no rule that a plain, shallow, ASCII document can break
/// (tests/cli/pipeline_test.py compares the two on tricky lines).
class FastJson {
  public:
    /// The parsed line, or false to fall back on io::parse_json_text.
    static bool parse(std::string_view text, json& out) {
        FastJson p(text);
        p.skip_ws();
        if (!p.value(out, 0)) {
            return false;
        }
        p.skip_ws();
        return p.at_ == p.end_;
    }

  private:
    static constexpr int kMaxDepth = 32;

    explicit FastJson(std::string_view text) : at_(text.data()), end_(text.data() + text.size()) {}

    void skip_ws() {
        while (at_ != end_ && (*at_ == ' ' || *at_ == '\t' || *at_ == '\n' || *at_ == '\r')) {
            ++at_;
        }
    }

    bool value(json& out, int depth) {
        if (at_ == end_ || depth > kMaxDepth) {
            return false;
        }
        switch (*at_) {
        case '[':
            return array(out, depth);
        case '{':
            return object(out, depth);
        case '"': {
            std::string s;
            if (!string(s)) {
                return false;
            }
            out = std::move(s);
            return true;
        }
        case 't':
            return literal("true", json(true), out);
        case 'f':
            return literal("false", json(false), out);
        case 'n':
            return literal("null", json(nullptr), out);
        default:
            return number(out);
        }
    }

    bool literal(std::string_view word, json&& v, json& out) {
        if (static_cast<std::size_t>(end_ - at_) < word.size() ||
            std::string_view(at_, word.size()) != word) {
            return false;
        }
        at_ += word.size();
        out = std::move(v);
        return true;
    }

    bool array(json& out, int depth) {
        ++at_; // '['
        // Elements go into a plain vector first: the json is built from it once, so the
        // parent pointers of JSON_DIAGNOSTICS are set once, not on every reallocation.
        json::array_t elements;
        skip_ws();
        if (at_ != end_ && *at_ == ']') {
            ++at_;
            out = json(std::move(elements));
            return true;
        }
        for (;;) {
            skip_ws();
            if (!value(elements.emplace_back(), depth + 1)) {
                return false;
            }
            skip_ws();
            if (at_ == end_) {
                return false;
            }
            if (*at_ == ']') {
                ++at_;
                out = json(std::move(elements));
                return true;
            }
            if (*at_ != ',') {
                return false;
            }
            ++at_;
        }
    }

    bool object(json& out, int depth) {
        ++at_; // '{'
        out = json::object();
        skip_ws();
        if (at_ != end_ && *at_ == '}') {
            ++at_;
            return true;
        }
        for (;;) {
            std::string key;
            skip_ws();
            if (at_ == end_ || *at_ != '"' || !string(key)) {
                return false;
            }
            skip_ws();
            if (at_ == end_ || *at_ != ':') {
                return false;
            }
            ++at_;
            skip_ws();
            json element;
            if (!value(element, depth + 1)) {
                return false;
            }
            out[key] = std::move(element); // a repeated key: the last wins, as in nlohmann
            skip_ws();
            if (at_ == end_) {
                return false;
            }
            if (*at_ == '}') {
                ++at_;
                return true;
            }
            if (*at_ != ',') {
                return false;
            }
            ++at_;
        }
    }

    /// Printable ASCII without escapes only.
    bool string(std::string& out) {
        const char* start = ++at_; // after '"'
        while (at_ != end_ && *at_ != '"') {
            const auto c = static_cast<unsigned char>(*at_);
            if (c < 0x20 || c > 0x7e || c == '\\') {
                return false;
            }
            ++at_;
        }
        if (at_ == end_) {
            return false;
        }
        out.assign(start, at_);
        ++at_; // '"'
        return true;
    }

    static bool digit(char c) { return c >= '0' && c <= '9'; }

    /// JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?. Integers become
    /// number_integer (negative) or number_unsigned, and floats when they overflow, as in
    /// nlohmann.
    bool number(json& out) {
        const char* start = at_;
        const char* p = at_;
        const bool negative = p != end_ && *p == '-';
        if (negative) {
            ++p;
        }
        if (p == end_ || !digit(*p)) {
            return false;
        }
        // The decimal digits as an integer mantissa, while it stays exact.
        std::uint64_t mantissa = 0;
        int digits = 0;   // digits in the mantissa, leading zeros aside
        int exponent = 0; // power of ten to apply to the mantissa
        auto take = [&](char c) {
            if (mantissa != 0 || c != '0') {
                ++digits;
            }
            if (digits <= 19) {
                mantissa = mantissa * 10 + static_cast<std::uint64_t>(c - '0');
            }
        };
        if (*p == '0') {
            ++p;
        } else {
            while (p != end_ && digit(*p)) {
                take(*p++);
            }
        }
        bool integer = true;
        if (p != end_ && *p == '.') {
            integer = false;
            ++p;
            if (p == end_ || !digit(*p)) {
                return false;
            }
            while (p != end_ && digit(*p)) {
                take(*p++);
                --exponent;
            }
        }
        if (p != end_ && (*p == 'e' || *p == 'E')) {
            integer = false;
            ++p;
            const bool exp_negative = p != end_ && *p == '-';
            if (p != end_ && (*p == '+' || *p == '-')) {
                ++p;
            }
            if (p == end_ || !digit(*p)) {
                return false;
            }
            int e = 0;
            while (p != end_ && digit(*p)) {
                e = std::min(e * 10 + (*p++ - '0'), 100000); // clamped: the fast path
            }                                                // below needs |e| <= 22
            exponent += exp_negative ? -e : e;
        }
        at_ = p;
        if (integer) {
            if (negative) {
                json::number_integer_t i = 0;
                const auto r = std::from_chars(start, p, i);
                if (r.ec == std::errc() && r.ptr == p) {
                    out = i;
                    return true;
                }
            } else {
                json::number_unsigned_t u = 0;
                const auto r = std::from_chars(start, p, u);
                if (r.ec == std::errc() && r.ptr == p) {
                    out = u;
                    return true;
                }
            }
        }
        // Clinger's fast path (1990): a mantissa below 2^53 and a power of ten up to 1e22
        // are both exact doubles, so one multiplication or division, correctly rounded,
        // gives the correctly rounded value: what strtod and from_chars give.
        static constexpr double powers[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                            1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                            1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
        if (digits <= 15 && exponent >= -22 && exponent <= 22) {
            const auto m = static_cast<double>(mantissa); // < 1e15 < 2^53: exact
            const double v = exponent < 0 ? m / powers[-exponent] : m * powers[exponent];
            out = negative ? -v : v;
            return true;
        }
        double d = 0.0;
        const auto r = std::from_chars(start, p, d);
        if (r.ec != std::errc() || r.ptr != p) {
            return false; // out of range: io::parse_json_text decides
        }
        out = d;
        return true;
    }

    const char* at_;
    const char* end_;
};

/// Parses a line: the fast path when it applies, io::parse_json_text otherwise.
json parse_line(const std::string& line, std::uint64_t line_no) {
    json doc;
    if (FastJson::parse(line, doc)) {
        return doc;
    }
    return io::parse_json_text(line, "line " + std::to_string(line_no));
}

/// Parses, decodes, solves and formats one line. Never throws for a bad line: this is the
/// per-line catch of the design rules, turning any failure into an error line.
LineResult process_line(const std::string& line, std::uint64_t line_no, const LineContext& ctx) {
    json id; // null until the line shows one
    try {
        json doc = parse_line(line, line_no);
        if (doc.is_object()) {
            if (const auto it = doc.find("id"); it != doc.end()) {
                id = *it;
            }
            for (const auto& [field, value] : ctx.defaults.items()) {
                if (!doc.contains(field)) {
                    doc[field] = value;
                }
            }
        }
        const problem::Problem problem = problem::decode_problem(doc, ctx.base);
        if (ctx.check_finite) {
            problem::check_finite(problem);
        }
        const problem::Solution s = problem::solve(problem, ctx.solve);
        return {problem::result_document(problem, s) + "\n", line_no, false, s.rows_fully_masked};
    } catch (const std::bad_alloc&) {
        return error_line(id, line_no, "out of memory");
    } catch (const std::exception& e) {
        return error_line(id, line_no, e.what());
    } catch (...) {
        return error_line(id, line_no, "internal error: unknown exception");
    }
}

bool blank(const std::string& line) {
    return line.find_first_not_of(" \t\r") == std::string::npos;
}

/// Lines from a file descriptor, read in 1 MiB chunks: no line is ever held twice, and
/// nothing beyond the current chunk and line is kept. A line longer than `max_line` bytes
/// is not kept either: it is read to its end and reported by overlong().
class LineReader {
  public:
    LineReader(int fd, std::string name, std::uint64_t max_line)
        : fd_(fd), name_(std::move(name)), max_line_(max_line), buf_(1u << 20) {}

    /// The next line without its '\n'; false at the end of the input. A last line
    /// without '\n' counts. An overlong line comes back empty, with overlong() giving its
    /// length. Throws InputError when the read fails.
    bool next(std::string& line) {
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
                throw InputError(name_ + ": cannot read: " + std::strerror(errno));
            }
            pos_ = 0;
            end_ = static_cast<std::size_t>(n);
            eof_ = n == 0;
        }
    }

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

/// The answer for a line too long to hold: it is skipped, never parsed.
LineResult overlong_line(std::uint64_t line_no, std::uint64_t length, std::uint64_t limit) {
    return error_line(json(),
                      line_no,
                      "line " + std::to_string(line_no) + ": " + io::format_size(length) +
                          " long, more than the memory limit of " + io::format_size(limit) +
                          ": skipped");
}

/// The input: FILE or stdin, its folder, and its size when it is a regular file.
struct Input {
    int fd = STDIN_FILENO;
    bool owned = false;
    std::string name = "<stdin>";
    fs::path base = fs::current_path();
    std::uint64_t size = 0; ///< 0: unknown

    explicit Input(const std::string& file) {
        if (!file.empty() && file != "-") {
            name = file;
            do {
                fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
            } while (fd < 0 && errno == EINTR);
            if (fd < 0) {
                throw InputError(file + ": cannot read: " + std::strerror(errno));
            }
            owned = true;
            base = fs::absolute(file).parent_path();
        }
        struct stat st {};
        if (::fstat(fd, &st) == 0) {
            if (S_ISDIR(st.st_mode)) {
                close_fd();
                throw InputError(name + ": cannot read: " + std::strerror(EISDIR));
            }
            if (S_ISREG(st.st_mode) && st.st_size > 0) {
                const off_t at = ::lseek(fd, 0, SEEK_CUR);
                size = static_cast<std::uint64_t>(st.st_size - (at > 0 ? at : 0));
            }
        }
    }
    ~Input() { close_fd(); }
    Input(const Input&) = delete;
    Input& operator=(const Input&) = delete;

  private:
    void close_fd() {
        if (owned) {
            ::close(fd);
            owned = false;
        }
    }
};

/// Writes result lines to stdout in the order it is given them, and keeps the counts.
class Writer {
  public:
    Writer(ProgressLine& progress, const LineReader& reader)
        : progress_(progress), reader_(reader) {}

    void write(const LineResult& r) {
        if (std::fwrite(r.text.data(), 1, r.text.size(), stdout) != r.text.size()) {
            fail();
        }
        ++done_;
        if (r.failed) {
            ++failed_;
        }
        if (r.rows_fully_masked > 0) {
            if (masked_problems_ == 0) {
                first_masked_line_ = r.line_no;
            }
            ++masked_problems_;
        }
        progress_.update(done_, failed_, reader_.bytes_read());
    }

    void flush() {
        if (std::fflush(stdout) != 0) {
            fail();
        }
    }

    std::uint64_t done() const { return done_; }
    std::uint64_t failed() const { return failed_; }
    std::uint64_t masked_problems() const { return masked_problems_; }
    std::uint64_t first_masked_line() const { return first_masked_line_; }

  private:
    [[noreturn]] static void fail() {
        throw SystemError(std::string("<stdout>: cannot write: ") +
                          std::strerror(errno != 0 ? errno : EIO));
    }

    ProgressLine& progress_;
    const LineReader& reader_;
    std::uint64_t done_ = 0, failed_ = 0, masked_problems_ = 0, first_masked_line_ = 0;
};

/// --jobs 1: read, compute, write, flush, one line at a time on this thread.
void run_inline(LineReader& reader, Writer& writer, const LineContext& ctx) {
    std::string line;
    std::uint64_t line_no = 0;
    while (reader.next(line)) {
        ++line_no;
        if (reader.overlong() > 0) {
            writer.write(overlong_line(line_no, reader.overlong(), reader.max_line()));
        } else if (!blank(line)) {
            writer.write(process_line(line, line_no, ctx));
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
    Pipeline(unsigned jobs, const LineContext& ctx, Writer& writer)
        : jobs_(jobs), window_(std::max<std::size_t>(16, std::size_t{8} * jobs)), ctx_(ctx),
          writer_(writer), slots_(window_) {}

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
                if (reader.overlong() == 0 && blank(line)) {
                    continue;
                }
                // At most window_ lines in flight, and at most max_line bytes of their text
                // (one line alone may always go): memory stays bounded by the limit, not by
                // window_ times it.
                const std::uint64_t size = line.size();
                std::unique_lock<std::mutex> lock(mutex_);
                space_.wait(lock, [this, size] {
                    return (next_seq_ - next_write_ < window_ &&
                            (inflight_bytes_ + size <= ctx_.max_line ||
                             next_seq_ == next_write_)) ||
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

            LineResult r = task.overlong > 0
                               ? overlong_line(task.line_no, task.overlong, ctx_.max_line)
                               : process_line(task.line, task.line_no, ctx_);

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
    const LineContext& ctx_;
    Writer& writer_;

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

/// The CPUs this process may run on (its affinity mask, as `taskset` or a container's
/// cpuset sets it), else the hardware's thread count.
unsigned usable_cores() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) {
            return static_cast<unsigned>(n);
        }
    }
    return std::max(1u, std::thread::hardware_concurrency());
}

/// Returns the number of failed lines.
std::uint64_t run_batch(const BatchArgs& a) {
    const unsigned cores = usable_cores();
    const unsigned jobs = a.jobs > 0 ? a.jobs : cores;

    apply_memory_limit(a.max_memory); // per line: each line's problem must fit
    const Input input(a.file);
    LineContext ctx;
    ctx.base = input.base;
    ctx.defaults = json::object();
    if (!a.variant.empty()) {
        ctx.defaults["variant"] = a.variant;
    }
    if (!a.causal.empty()) {
        ctx.defaults["causal"] = a.causal;
    }
    if (!a.scale.empty()) {
        ctx.defaults["scale"] = parse_scale_flag(a.scale);
    }
    if (a.heads > 0) {
        ctx.defaults["num_heads"] = a.heads;
    }
    if (a.kv_heads > 0) {
        ctx.defaults["num_kv_heads"] = a.kv_heads;
    }
    if (!a.precision.empty()) {
        ctx.defaults["precision"] = a.precision;
    }
    ctx.solve.want_weights = !a.no_weights;
    ctx.check_finite = a.check_finite;
    // Parallel lines, one thread each, rather than parallel rows inside one small problem.
    ctx.solve.threads = a.threads > 0 ? a.threads : std::max(1u, cores / jobs);

    // A line longer than the memory limit could not be decoded anyway: skip it unread.
    ctx.max_line = io::memory_limit();
    LineReader reader(input.fd, input.name, ctx.max_line);
    // With stdout on the terminal too, the result lines themselves show progress.
    ProgressLine progress(
        progress_wanted(a.quiet) && ::isatty(STDOUT_FILENO) == 0, "attn batch", input.size);
    Writer writer(progress, reader);
    if (jobs == 1) {
        run_inline(reader, writer, ctx);
    } else {
        Pipeline(jobs, ctx, writer).run(reader);
    }
    progress.clear();

    if (!a.quiet && writer.masked_problems() > 0) {
        warn(std::to_string(writer.masked_problems()) +
             " problem(s) have query rows that can see no key (fully masked; the first on "
             "line " +
             std::to_string(writer.first_masked_line()) +
             "): their weights are zeros and their attention output is zeros");
    }
    if (!a.quiet && writer.failed() > 0) {
        warn(std::to_string(writer.failed()) + " of " + std::to_string(writer.done()) +
             " problem(s) failed: see their \"error\" lines");
    }
    return writer.failed();
}

} // namespace

void add_batch(CLI::App& app) {
    auto args = std::make_shared<BatchArgs>();
    CLI::App* cmd = app.add_subcommand(
        "batch",
        "JSON Lines in (one problem per line; - or absent = stdin), results out, in order");
    cmd->footer(
        "One result line per problem line, in input order, written as soon as it is ready;\n"
        "a line that fails gives {\"id\": .., \"error\": ..} and the run goes on. Exit 0 "
        "when every\nline succeeded, 1 when any failed. Progress shows on stderr when it "
        "is a terminal.");
    add_version_flag(*cmd);
    cmd->add_option("file", args->file, "JSON Lines file, or - for stdin");
    cmd->add_option("-j,--jobs", args->jobs, "problems computed in parallel (default: all cores)")
        ->check(positive_count());
    cmd->add_flag("--no-weights", args->no_weights, "leave the weights out of every result");
    cmd->add_option(
           "--threads", args->threads, "threads per problem (default: cores / jobs, at least 1)")
        ->check(positive_count());
    cmd->add_flag("--quiet", args->quiet, "no warnings and no progress on stderr");
    add_limit_options(*cmd, args->max_memory, args->check_finite);
    auto* g = "Defaults for every line (a line's own fields win)";
    cmd->add_option(
           "--variant", args->variant, "preset: dot, scaled, self, masked-self, cross, multihead")
        ->group(g);
    cmd->add_option("--heads", args->heads, "num_heads")->check(positive_count())->group(g);
    cmd->add_option("--kv-heads", args->kv_heads, "num_kv_heads")
        ->check(positive_count())
        ->group(g);
    cmd->add_option("--scale", args->scale, "score scale (a number, or 'default')")->group(g);
    cmd->add_option("--precision",
                    args->precision,
                    "f32 or f64: the whole computation in float64, results printed as "
                    "shortest round-trip doubles")
        ->check(CLI::IsMember({"f32", "f64"}))
        ->group(g);
    cmd->add_flag("--causal{top-left}",
                  args->causal,
                  "causal mask: --causal (top-left) or --causal=bottom-right")
        ->group(g);
    cmd->callback([args] {
        if (run_batch(*args) > 0) {
            throw ExitCode{1};
        }
    });
}

} // namespace attn::app
