#!/usr/bin/env python3
"""CLI tests of .npz inputs (numpy's savez / savez_compressed): a bare `x.npz` takes the
member named like the field, `x.npz:name` takes `name`; results equal the same arrays given
as .npy files; a missing member, an archive with no such array and the files attn does not
read (.pt, .pth, .bin, .gguf) are one-line errors with a hint; `attn info x.npz` lists every
array.

Run from the repository root: /usr/bin/python3 tests/cli/npz_test.py PATH/TO/attn
Ends with the line "N passed, M failed"; exits 1 if any case failed.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ATTN = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="attn-npz-cli-")
passed = failed = 0


def run(args, stdin=None):
    p = subprocess.run([ATTN] + args, input=stdin, capture_output=True, cwd=TMP, timeout=60)
    return p.returncode, p.stdout.decode(), p.stderr.decode("utf-8", "replace")


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")


def error_case(name, args, pattern):
    rc, out, err = run(args)
    lines = err.strip().splitlines()
    check(name, rc == 2 and len(lines) == 1 and lines[0].startswith("attn: error: ")
          and re.search(pattern, lines[0]) is not None and out == "",
          f"exit {rc}, stderr {err.strip()[:300]!r}")


rng = np.random.default_rng(11)
q = rng.standard_normal((2, 3, 5, 4)).astype("<f4")
k = rng.standard_normal((2, 3, 6, 4)).astype("<f8")
v = rng.standard_normal((2, 3, 6, 2)).astype(">f4")
mask = rng.random((5, 6)) > 0.3
mask[:, 0] = True
for name, arr in (("q.npy", q), ("k.npy", k), ("v.npy", v), ("mask.npy", mask)):
    np.save(os.path.join(TMP, name), arr)
np.savez(os.path.join(TMP, "named.npz"), query=q, key=k, value=v, mask=mask)
np.savez_compressed(os.path.join(TMP, "packed.npz"), q, k, v, mask)
with open(os.path.join(TMP, "model.pt"), "wb") as f:
    f.write(b"PK\x03\x04 not read")

rc, reference, err = run(["compute", "-q", "q.npy", "-k", "k.npy", "-v", "v.npy",
                          "--mask", "mask.npy"])
check("reference", rc == 0 and reference, err)

rc, out, err = run(["compute", "-q", "named.npz", "-k", "named.npz", "-v", "named.npz",
                    "--mask", "named.npz"])
check("bare npz takes the field's member", rc == 0 and out == reference, f"{rc} {err}")

rc, out, err = run(["compute", "-q", "packed.npz:arr_0", "-k", "packed.npz:arr_1",
                    "-v", "packed.npz:arr_2", "--mask", "packed.npz:arr_3"])
check("compressed npz with named members", rc == 0 and out == reference, f"{rc} {err}")

with open(os.path.join(TMP, "p.json"), "w") as f:
    json.dump({"query": "named.npz", "key": "named.npz:key", "value": "packed.npz:arr_2",
               "mask": "named.npz"}, f)
rc, out, err = run(["compute", "p.json"])
check("npz paths in a problem file", rc == 0 and out == reference, f"{rc} {err}")

# The archive with positional names has no member called like the field.
error_case("missing member lists the arrays", ["compute", "-q", "packed.npz", "-k", "k.npy",
                                               "-v", "v.npy"],
           r"^attn: error: query: .*packed\.npz:query: no array 'query' in the archive "
           r"\(it has: arr_0, arr_1, arr_2, arr_3; name one as FILE\.npz:NAME\)$")
error_case("named member absent", ["compute", "-q", "named.npz:q", "-k", "k.npy", "-v", "v.npy"],
           r"named\.npz:q: no array 'q' in the archive")
error_case("missing archive", ["compute", "-q", "nothere.npz", "-k", "k.npy", "-v", "v.npy"],
           r"nothere\.npz: cannot read: No such file or directory$")
error_case("pytorch file gets a hint", ["compute", "-q", "model.pt", "-k", "k.npy", "-v", "v.npy"],
           r"model\.pt: unknown array format .*np\.save\('x\.npy', t\.numpy\(\)\).*safetensors$")
for ext in ("pth", "bin"):
    error_case(f".{ext} gets a hint", ["compute", "-q", f"model.{ext}", "-k", "k.npy", "-v",
                                       "v.npy"], r"PyTorch files are pickles")
error_case(".gguf gets a hint", ["compute", "-q", "m.gguf", "-k", "k.npy", "-v", "v.npy"],
           r"GGUF files are not read")
error_case("npz is no output format", ["compute", "-q", "q.npy", "-k", "k.npy", "-v", "v.npy",
                                       "--output", "out.npz"],
           r"out\.npz: unknown array format \(expected \.npy or \.json\)$")
check("no partial output", not os.path.exists(os.path.join(TMP, "out.npz")))

rc, out, err = run(["info", "named.npz"])
check("info lists every array", rc == 0 and out.splitlines() == [
    "named.npz:query: shape [2, 3, 5, 4], dtype float32, 120 elements",
    "named.npz:key: shape [2, 3, 6, 4], dtype float64, 144 elements",
    "named.npz:value: shape [2, 3, 6, 2], dtype float32, 72 elements",
    "named.npz:mask: shape [5, 6], dtype bool, 30 elements"], f"{rc} {out} {err}")
rc, out, err = run(["info", "--json", "packed.npz:arr_3"])
check("info of one member", rc == 0 and json.loads(out) == {
    "file": "packed.npz:arr_3", "shape": [5, 6], "dtype": "bool"}, f"{rc} {out} {err}")
error_case("heatmap of a many-array npz names the rule", ["heatmap", "named.npz", "-o", "h.png"],
           r"named\.npz: the archive holds 4 arrays: name one as FILE\.npz:NAME$")
w = rng.random((2, 5, 6)).astype("<f4")
np.save(os.path.join(TMP, "w.npy"), w)
np.savez(os.path.join(TMP, "w.npz"), other=mask, weights=w)
np.savez(os.path.join(TMP, "one.npz"), w)
for name, src in (("'weights' member", "w.npz"), ("only array", "one.npz"),
                  ("named member", "w.npz:weights")):
    rc1, out1, err1 = run(["heatmap", src, "-o", "from_npz.svg"])
    rc2, out2, err2 = run(["heatmap", "w.npy", "-o", "from_npy.svg"])
    # The figures differ only in their title, the file's name.
    svg1 = open(os.path.join(TMP, "from_npz.svg")).read() if rc1 == 0 else ""
    svg2 = open(os.path.join(TMP, "from_npy.svg")).read() if rc2 == 0 else "-"
    same = svg1.replace(f">{src}</text>", ">w.npy</text>") == svg2
    check(f"heatmap from the {name}", same, f"{rc1} {err1} {rc2} {err2}")

shutil.rmtree(TMP)
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
