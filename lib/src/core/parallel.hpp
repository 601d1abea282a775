// The fork-join loop is public (attn/parallel.hpp) so that the layers above the core (the
// HTML view's panels) use the same one; the kernels include it from here.
#pragma once

#include "attn/parallel.hpp"
