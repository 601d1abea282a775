#!/usr/bin/python3
"""Prints a colormaps.txt block for a matplotlib colormap built from a list of colours
(LinearSegmentedColormap.from_list(name, colors, 256), as matplotlib's cm.py builds the
ColorBrewer maps of _cm.py), for a machine without matplotlib:

    /usr/bin/python3 scripts/colormap_segmented.py rdbu >> lib/src/render/colormaps.txt

The table is matplotlib 3.6's colors._create_lookup_table (gamma 1) on evenly spaced
anchors, then Colormap(bytes=True)'s (lut * 255).astype(uint8), transcribed. Before
printing, the transcription regenerates blues and greys, which colormaps.txt holds as
matplotlib itself made them, and exits 1 unless both match byte for byte.
"""
import os
import sys

import numpy as np

# ColorBrewer's anchors as matplotlib's _cm.py has them (its floats are these / 255).
ANCHORS = {
    "blues": [(247, 251, 255), (222, 235, 247), (198, 219, 239), (158, 202, 225),
              (107, 174, 214), (66, 146, 198), (33, 113, 181), (8, 81, 156), (8, 48, 107)],
    "greys": [(255, 255, 255), (240, 240, 240), (217, 217, 217), (189, 189, 189),
              (150, 150, 150), (115, 115, 115), (82, 82, 82), (37, 37, 37), (0, 0, 0)],
    # _RdBu_data: red (negative) through white to blue (positive), 11 colours.
    "rdbu": [(103, 0, 31), (178, 24, 43), (214, 96, 77), (244, 165, 130), (253, 219, 199),
             (247, 247, 247), (209, 229, 240), (146, 197, 222), (67, 147, 195),
             (33, 102, 172), (5, 48, 97)],
}
TABLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib", "src",
                      "render", "colormaps.txt")


def table(name, n=256):
    colours = np.array(ANCHORS[name], float) / 255.0
    x = np.linspace(0, 1, len(colours)) * (n - 1)
    xind = (n - 1) * np.linspace(0, 1, n)
    ind = np.searchsorted(x, xind)[1:-1]
    distance = (xind[1:-1] - x[ind - 1]) / (x[ind] - x[ind - 1])
    channels = []
    for y in colours.T:
        lut = np.concatenate([[y[0]], distance * (y[ind] - y[ind - 1]) + y[ind - 1], [y[-1]]])
        channels.append(np.clip(lut, 0.0, 1.0))
    return ["%02x%02x%02x" % tuple(rgb) for rgb in (np.stack(channels, 1) * 255).astype(np.uint8)]


def stored(name):
    words, inside = [], False
    with open(TABLES) as f:
        for line in f:
            line = line.strip()
            if line.endswith(":"):
                inside = line == name + ":"
            elif inside and line and not line.startswith("#"):
                words += line.split()
    return words


def main():
    for name in ("blues", "greys"):
        if table(name) != stored(name):
            sys.exit("colormap_segmented: the transcription does not give matplotlib's " + name)
    name = sys.argv[1]
    rows = table(name)
    print("\n" + name + ":")
    for i in range(0, 256, 8):
        print(" ".join(rows[i:i + 8]))


if __name__ == "__main__":
    main()
