// attn's exception types. The library throws; only app/main.cpp turns them into exit
// codes (InputError -> 2, everything else -> 1). Every what() is one line that names
// the culprit (field, file or argument) and has no trailing newline. A rule that several
// places check (a field's form, a shape, a rank, a window, a list of strings, a file that
// cannot be read, trailing bytes, the fully-masked rows) has its one wording built here,
// whoever checks it (a field, a flag, the core, a batch line, the Python module).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

/// Everything attn throws on purpose.
class Error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

/// Marks an option's name inside a message (see option_name).
inline constexpr char kOptionMark = '\x1f';

/// An option's name inside a message: `field` as the problem document and the Python
/// module spell it ("vmin", "max_memory", "colormap"), marked. what() reads it as `field`;
/// a front end that spells options its own way renders InputError::marked() (the CLI:
/// cli::error_text, which writes the flag). The library names fields, never flags.
/// Example: InputError(option_name("vmin") + ": must be > 0 with " + option_name("scale") +
///          " log") reads "vmin: must be > 0 with scale log" (the CLI prints the same with
///          the flags of vmin and scale).
std::string option_name(std::string_view field);

/// `marked` with each option_name in it spelled by `spell` (the field itself when null).
std::string spell_options(std::string_view marked,
                          const std::function<std::string(std::string_view)>& spell = {});

/// The input cannot be used as given (flags, parse errors, shapes). CLI exit 2.
class InputError : public Error {
  public:
    /// `message` may name options through option_name(): what() reads them as fields.
    explicit InputError(const std::string& message);
    explicit InputError(const char* message) : InputError(std::string(message)) {}

    /// The message with its options marked (option_name), for a front end that renders
    /// them its own way; what() is spell_options(marked()).
    const std::string& marked() const noexcept { return *marked_; }

    /// "what: expected EXPECTED, got GOT" (", got GOT" left out when `got` is empty): a
    /// field, flag or argument that is not of the form it must have. Every kind below that
    /// says "expected" is this form.
    static InputError
    field(std::string_view what, std::string_view expected, std::string_view got = {});
    /// "what: expected shape [2, 8, 128, 64], got [2, 8, 128, 32]".
    /// Use "?" in `want` by passing kAnyDim for a dimension that may be anything.
    static InputError shape(std::string_view what,
                            const std::vector<std::size_t>& want,
                            const std::vector<std::size_t>& got);
    /// "FILE: detail".
    static InputError at(const std::filesystem::path& file, std::string_view detail);
    /// "what: expected a rank-N FORM, got shape [..]": an array of the wrong rank, e.g.
    /// rank("params.w_q", 2, "[out, in] weight", {3}).
    static InputError rank(std::string_view what,
                           std::size_t rank,
                           std::string_view form,
                           const std::vector<std::size_t>& got);
    /// "what: expected FORM, integers >= -1 (-1 = unbounded), got GOT": a sliding window,
    /// as a field ("[left, right]"), a flag ("L,R") or a spec. `got` as the user wrote it.
    static InputError window(std::string_view what, std::string_view form, std::string_view got);
    /// A list of strings (token labels, text): "what: expected a list of strings, got TYPE"
    /// for the value (TYPE empty: not named).
    static InputError string_list(std::string_view what, std::string_view got = {});
    /// Its element `index`: "what: [INDEX]: expected a string, got TYPE".
    static InputError
    string_list_item(std::string_view what, std::size_t index, std::string_view got);
    /// "what: expected N tokens[ (NOTE)], got M": a list of labels whose length is not its
    /// axis's (a document's tokens, a label flag, the Python module's labels).
    static InputError label_count(std::string_view what,
                                  std::size_t want,
                                  std::size_t got,
                                  std::string_view note = {});
    /// "FILE: cannot read: REASON", REASON the text of errno `err` ("No such file or
    /// directory", "Is a directory", ...): a file that cannot be opened or read.
    static InputError cannot_read(std::string_view file, int err);
    /// "what: trailing bytes: header says N bytes of data, file has M": a file longer than
    /// its header says (NPY).
    static InputError
    trailing_bytes(std::string_view what, std::uint64_t header_bytes, std::uint64_t file_bytes);

  private:
    std::shared_ptr<const std::string> marked_; // shared: copying an exception never throws
};

/// The one wording of the fully-masked warning (no "warning:" prefix): "ROWS can see no key
/// (fully masked[; NOTE]): their weights are zeros and their attention output is zeros".
/// `rows` counts them: "3 query row(s) (over all batches and heads)".
std::string fully_masked_text(std::string_view rows, std::string_view note = {});

/// The environment failed (write, rename, out of space). CLI exit 1.
class SystemError : public Error {
  public:
    using Error::Error;
};

/// A run stopped because its caller asked it to (detail::InterruptionScope: Ctrl-C in the
/// Python module). Never a problem of the input; the front end that asked knows why.
class Interrupted : public Error {
  public:
    Interrupted() : Error("interrupted") {}
};

/// A dimension that may take any value in an expected shape (printed as "*").
inline constexpr std::size_t kAnyDim = static_cast<std::size_t>(-1);

/// "[2, 8, 128, 64]"; kAnyDim prints as "*".
std::string shape_string(const std::vector<std::size_t>& shape);

} // namespace attn

/// Checks our own invariants (never user input): on in Debug and sanitizer builds.
#if defined(ATTN_ENABLE_ASSERTS)
#include <cstdio>
#include <cstdlib>
#define ATTN_ASSERT(cond)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "attn: internal error: %s:%d: %s\n", __FILE__, __LINE__, #cond);  \
            std::abort();                                                                          \
        }                                                                                          \
    } while (false)
#else
#define ATTN_ASSERT(cond) ((void)0)
#endif
