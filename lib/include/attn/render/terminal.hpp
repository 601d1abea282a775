// The heatmap as terminal text: small maps as a table of coloured cells with their
// values, large ones as half-block pixels (two rows per character, pooled to fit), with
// labels and a colour legend. 24-bit, 256-colour or no-colour output; the caller reads
// the environment (NO_COLOR, COLORTERM) and the terminal width. Returns a string.
#pragma once

#include "attn/render/heatmap.hpp"

#include <string>

namespace attn::render {

/// Escape sequences to use: 24-bit ("38;2;r;g;b"), the xterm 256-colour palette, or none
/// (shades and values only, no escape sequences at all).
enum class TermColor { truecolor, palette256, none };

struct TermOptions {
    TermColor color = TermColor::truecolor;
    int width = 80;     ///< columns available
    int max_lines = 40; ///< text lines per panel at most
};

/// --color: auto (colour only to a terminal, NO_COLOR honoured), always, never.
enum class ColorChoice { automatic, always, never };

/// The colour mode for --color `choice`: never, or auto when stdout is not a terminal,
/// give none; auto otherwise follows term_color_from_env(); always colours even in a pipe
/// and despite NO_COLOR (the flag wins), in the mode COLORTERM says.
TermColor
term_color(ColorChoice choice, bool to_terminal, const char* no_color, const char* colorterm);

/// A terminal's size in character cells.
struct TermSize {
    int columns = 80, lines = 24;
};

/// The size to fit: the terminal's own (TIOCGWINSZ; 0 = unknown) per axis, else the
/// COLUMNS/LINES values (null = unset; positive whole numbers only), else 80 x 24.
TermSize term_size(int tty_columns, int tty_lines, const char* columns, const char* lines);

/// Options that fit `size`: its width, and panels no taller than its lines.
TermOptions term_options(TermColor color, TermSize size);

/// Picks the colour mode from the environment's values (null = unset): NO_COLOR set and
/// non-empty gives none; COLORTERM "truecolor" or "24bit" gives truecolor; else 256.
TermColor term_color_from_env(const char* no_color, const char* colorterm);

/// The nearest colour of the xterm 256-colour palette (cube 16-231 or greys 232-255).
int xterm256_index(Rgb c);

/// Renders the heatmap for a terminal; every line ends with '\n' and, when coloured,
/// resets its attributes. Layout: the title, pooling notes, then per panel its title,
/// x labels, and one line per query (table mode: each cell a block of width enough for
/// its value, printed in a contrasting colour) or per two queries (half-block mode, for
/// maps wider than the terminal or taller than max_lines); then the axis names and a
/// legend bar from vmin to vmax. Masked cells show as light hatching ("╱").
/// Throws InputError as prepare_heatmap() does.
std::string
heatmap_terminal(const HeatmapInput& input, const HeatmapOptions& options, const TermOptions& term);

} // namespace attn::render
