// encode_png: stb_image_write into a byte vector. stb's compression level is a
// process-global; we never change it, so concurrent encoders agree.
#include "attn/render/png.hpp"

#include "attn/error.hpp"

#include <stb_image_write.h>

namespace attn::render {

namespace {

void append(void* context, void* data, int size) {
    auto* out = static_cast<std::vector<std::uint8_t>*>(context);
    const auto* bytes = static_cast<const std::uint8_t*>(data);
    out->insert(out->end(), bytes, bytes + size);
}

} // namespace

std::vector<std::uint8_t> encode_png(const Image& image) {
    if (image.width <= 0 || image.height <= 0 ||
        image.pixels.size() !=
            static_cast<std::size_t>(image.width) * static_cast<std::size_t>(image.height) * 3) {
        throw InputError("png: cannot encode an empty or inconsistent image");
    }
    std::vector<std::uint8_t> out;
    const int ok = stbi_write_png_to_func(
        append, &out, image.width, image.height, 3, image.pixels.data(), image.width * 3);
    if (ok == 0) {
        throw SystemError("png: encoding failed (out of memory?)");
    }
    return out;
}

} // namespace attn::render
