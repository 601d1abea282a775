// The single translation unit that compiles stb's implementations (PNG writer, PNG
// reader for tests, TrueType rasteriser). Built without our warning flags: stb is
// third-party code. We define the implementations here rather than link Debian's
// libstb, so exactly one copy exists.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_IMPLEMENTATION
#define STB_TRUETYPE_IMPLEMENTATION
#include <stb_image.h>
#include <stb_image_write.h>
#include <stb_truetype.h>
