// Attention weights read back for drawing: `attn heatmap WEIGHTS`'s input (NPY, .npz, a
// JSON array or a result document with its tokens and stacked layers), with the axes the
// file gives them. A regular .npy file is mapped, not read (io::NpyView): its values stay
// in the page cache, and a reader done with a part of them releases its pages.
#pragma once

#include "attn/io/array.hpp"
#include "attn/io/npy.hpp"
#include "attn/problem/result_read.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace attn::problem {

/// Weights as read, with what the file says about them.
struct LoadedWeights {
    std::string name;                ///< for messages and the default title: the path, or "<stdin>"
    io::Array array;                 ///< its shape always; its values unless `view` holds them
    WeightsAxes axes;                ///< axes_of_rank() of the shape without `layers`
    std::vector<std::size_t> layers; ///< a stacked result's "layers": its leading axis
    std::vector<std::string> query_tokens, key_tokens; ///< a result document's labels
    bool document = false; ///< read from a result document's "weights" (else a bare array)
    /// A regular .npy file read in place (mapped): its values, not copied into `array`.
    std::shared_ptr<const io::NpyView> view;

    std::span<const float> values() const {
        return view ? view->values() : std::span<const float>(array.values);
    }
    /// Values [first, first + count) are not needed any more (io::NpyView::release); a
    /// no-op unless mapped.
    void release(std::size_t first, std::size_t count) const noexcept {
        if (view) {
            view->release(first, count);
        }
    }
    /// Throws InputError naming the file when a mapped file shrank while it was read
    /// (io::NpyView::check_unchanged); nothing unless mapped.
    void check_unchanged() const {
        if (view) {
            view->check_unchanged();
        }
    }
};

/// Reads weights from `path` ("-": the bytes `read_stdin` returns). A bare .npz gives its
/// "weights" array, or its only one; `FILE.npz:NAME` that member. The extension names the
/// format when it is .npy or .json, else the bytes do. Throws InputError naming the file,
/// and for a result document without "weights".
LoadedWeights read_weights(const std::string& path,
                           const std::function<std::vector<std::uint8_t>()>& read_stdin);

} // namespace attn::problem
