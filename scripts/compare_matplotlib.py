#!/usr/bin/env python3
# Not a test and not a dependency: needs Debian python3-matplotlib, installed by hand.
"""Draws the same weights with matplotlib (imshow + colorbar + annotations, the seeds'
look) and with attn, then compares cell colours and shows both side by side.
usage: python3 compare_mpl.py ATTN WEIGHTS.json OUTDIR [--cmap NAME]"""
import json, subprocess, sys, os
import xml.etree.ElementTree as ET
import numpy as np
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

attn, weights, out = sys.argv[1], sys.argv[2], sys.argv[3]
cmap = sys.argv[5] if len(sys.argv) > 5 and sys.argv[4] == "--cmap" else "viridis"
doc = json.load(open(weights))
w = np.array(doc["weights"] if isinstance(doc, dict) else doc, dtype=np.float32)
qt = doc.get("query_tokens") if isinstance(doc, dict) else None
kt = doc.get("key_tokens") if isinstance(doc, dict) else None
lq, lk = w.shape

# matplotlib
fig, ax = plt.subplots(dpi=100)
im = ax.imshow(w, cmap=cmap, interpolation="nearest")
ax.set_xticks(range(lk), kt if kt else range(lk))
ax.set_yticks(range(lq), qt if qt else range(lq))
ax.set_xlabel("Keys"); ax.set_ylabel("Queries"); ax.set_title("title")
fig.colorbar(im, ax=ax)
norm = im.norm
for i in range(lq):
    for j in range(lk):
        rgb = np.array(im.cmap(norm(w[i, j]))[:3])
        lin = np.where(rgb <= 0.03928, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
        lum = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
        ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center",
                color=".15" if lum > 0.408 else "w")
fig.canvas.draw()
mpl_png = os.path.join(out, "mpl.png")
fig.savefig(mpl_png, dpi=100, bbox_inches="tight")
# cell centres in the saved (tight) image: redo the transform on the saved figure
renderer = fig.canvas.get_renderer()
bbox = fig.get_tightbbox(renderer).padded(0.1)
mpl_img = (plt.imread(mpl_png)[:, :, :3] * 255).round().astype(int)
H = mpl_img.shape[0]
def mpl_cell(i, j, dx=-0.4, dy=-0.4):  # near the cell's top-left corner, off the text
    x, y = ax.transData.transform((j + dx, i + dy))
    x -= bbox.x0 * fig.dpi; y -= bbox.y0 * fig.dpi
    return tuple(mpl_img[int(round(H - y)), int(round(x))])

# attn
ours_png, ours_svg = os.path.join(out, "attn.png"), os.path.join(out, "attn.svg")
extra = ["--cmap", cmap, "--title", "title"]
subprocess.run([attn, "heatmap", weights, "-o", ours_png] + extra, check=True)
subprocess.run([attn, "heatmap", weights, "-o", ours_svg] + extra, check=True)
ours = (plt.imread(ours_png)[:, :, :3] * 255).round().astype(int)
ns = "{http://www.w3.org/2000/svg}"
rects = [r for g in ET.parse(ours_svg).getroot().iter(ns + "g") if g.get("id") == "panel-0"
         for r in g.iter(ns + "rect")]
same = 0
for k, r in enumerate(rects):
    i, j = divmod(k, lk)
    o = tuple(ours[int(float(r.get("y"))) + 3, int(float(r.get("x"))) + 3])
    m = mpl_cell(i, j)
    same += o == m
    if o != m:
        print(f"cell {i},{j}: attn {o} matplotlib {m}")
print(f"{same}/{len(rects)} cells have identical RGB in both PNGs")
print(f"sizes: attn {ours.shape[1]}x{ours.shape[0]}, matplotlib {mpl_img.shape[1]}x{mpl_img.shape[0]}")
# side by side
hh = max(ours.shape[0], mpl_img.shape[0])
pad = lambda a: np.pad(a, ((0, hh - a.shape[0]), (0, 10), (0, 0)), constant_values=255)
plt.imsave(os.path.join(out, "side_by_side.png"),
           np.concatenate([pad(ours), pad(mpl_img)], axis=1).astype(np.uint8))
