#!/usr/bin/python3
"""CLI tests of .npz inputs (numpy's savez / savez_compressed): a bare `x.npz` takes the
member named like the field, `x.npz:name` takes `name`; results equal the same arrays given
as .npy files; a missing member, an archive with no such array and the files attn does not
read (.pt, .pth, .bin, .gguf) are one-line errors with a hint; `attn info x.npz` lists every
array.

    /usr/bin/python3 tests/cli/npz_test.py PATH/TO/attn [--case NAME]   (from the repo root)
    /usr/bin/python3 tests/cli/npz_test.py --list
"""
import json
import os

import numpy as np

from harness import case, check, expect, main, path, run, test

# The inputs, written by every process (each case reads only these and what it writes).
rng = np.random.default_rng(11)
q = rng.standard_normal((2, 3, 5, 4)).astype("<f4")
k = rng.standard_normal((2, 3, 6, 4)).astype("<f8")
v = rng.standard_normal((2, 3, 6, 2)).astype(">f4")
mask = rng.random((5, 6)) > 0.3
mask[:, 0] = True
for name, arr in (("q.npy", q), ("k.npy", k), ("v.npy", v), ("mask.npy", mask)):
    np.save(path(name), arr)
np.savez(path("named.npz"), query=q, key=k, value=v, mask=mask)
np.savez_compressed(path("packed.npz"), q, k, v, mask)
with open(path("model.pt"), "wb") as f:
    f.write(b"PK\x03\x04 not read")
w = rng.random((2, 5, 6)).astype("<f4")
np.save(path("w.npy"), w)
np.savez(path("w.npz"), other=mask, weights=w)
np.savez(path("one.npz"), w)


def reference():
    """The result of the same problem from .npy files (checked: exit 0, some output)."""
    rc, out, err = run(["compute", "-q", "q.npy", "-k", "k.npy", "-v", "v.npy",
                        "--mask", "mask.npy"])
    check("reference", rc == 0 and out, err)
    return out


def same_as_reference(name, args):
    @test(name)
    def _():
        want = reference()
        rc, out, err = run(args)
        check(name, rc == 0 and out == want, f"{rc} {err}")


@test("reference")
def _():
    reference()


same_as_reference("bare npz takes the field's member",
                  ["compute", "-q", "named.npz", "-k", "named.npz", "-v", "named.npz",
                   "--mask", "named.npz"])
same_as_reference("compressed npz with named members",
                  ["compute", "-q", "packed.npz:arr_0", "-k", "packed.npz:arr_1",
                   "-v", "packed.npz:arr_2", "--mask", "packed.npz:arr_3"])
with open(path("p.json"), "w") as f:
    json.dump({"query": "named.npz", "key": "named.npz:key", "value": "packed.npz:arr_2",
               "mask": "named.npz"}, f)
same_as_reference("npz paths in a problem file", ["compute", "p.json"])


def error_case(name, args, pattern):
    """Exit 2, one 'attn: error:' line matching pattern, nothing on stdout."""
    case(name, args, code=2, err=pattern, out=lambda so: so == b"")


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
           r"a GGUF file is a whole model, not an array: give it as --params")


@test("npz output holds output and weights as np.savez writes them")
def _():
    expect(["compute", "-q", "q.npy", "-k", "k.npy", "-v", "v.npy", "--output", "out.npz"],
           out=lambda so: so == b"", name="npz output")
    z = np.load(path("out.npz"))
    check("npz members", sorted(z.files) == ["output", "weights"], str(z.files))
    rc, out, err = run(["compute", "-q", "q.npy", "-k", "k.npy", "-v", "v.npy"])
    doc = json.loads(out)
    check("npz output equals the document's",
          np.allclose(z["output"], np.array(doc["output"], dtype=np.float32), rtol=0, atol=0) and
          np.allclose(z["weights"], np.array(doc["weights"], dtype=np.float32), rtol=0, atol=0),
          err)


@test("info lists every array")
def _():
    rc, out, err = run(["info", "named.npz"])
    check("info lists every array", rc == 0 and out.decode().splitlines() == [
        "named.npz:query: shape [2, 3, 5, 4], dtype float32, 120 elements",
        "named.npz:key: shape [2, 3, 6, 4], dtype float64, 144 elements",
        "named.npz:value: shape [2, 3, 6, 2], dtype float32, 72 elements",
        "named.npz:mask: shape [5, 6], dtype bool, 30 elements"], f"{rc} {out} {err}")


@test("info of one member")
def _():
    rc, out, err = run(["info", "--json", "packed.npz:arr_3"])
    check("info of one member", rc == 0 and json.loads(out) == {
        "file": "packed.npz:arr_3", "shape": [5, 6], "dtype": "bool"}, f"{rc} {out} {err}")


error_case("heatmap of a many-array npz names the rule", ["heatmap", "named.npz", "-o", "h.png"],
           r"named\.npz: the archive holds 4 arrays: name one as FILE\.npz:NAME$")


def heatmap_case(name, src):
    @test(f"heatmap from the {name}")
    def _():
        rc1, _, err1 = run(["heatmap", src, "-o", "from_npz.svg"])
        rc2, _, err2 = run(["heatmap", "w.npy", "-o", "from_npy.svg"])
        # The figures differ only in their title, the file's name.
        svg1 = open(path("from_npz.svg")).read() if rc1 == 0 else ""
        svg2 = open(path("from_npy.svg")).read() if rc2 == 0 else "-"
        same = svg1.replace(f">{src}</text>", ">w.npy</text>") == svg2
        check(f"heatmap from the {name}", same, f"{rc1} {err1} {rc2} {err2}")


for name, src in (("'weights' member", "w.npz"), ("only array", "one.npz"),
                  ("named member", "w.npz:weights")):
    heatmap_case(name, src)

main()
