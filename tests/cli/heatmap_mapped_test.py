#!/usr/bin/env python3
"""`attn heatmap W.npy` reads a regular .npy file in place (io::NpyView: mapped, header
checked strictly, float32 values not copied, each panel's pages dropped once pooled). The
same weights through stdin take the reading path (the whole file read, then decoded): the
pictures must be byte-identical, for float32 in place, and for the dtypes and layouts that
are decoded (float64, Fortran order, big-endian).

Run: /usr/bin/python3 tests/cli/heatmap_mapped_test.py PATH/TO/attn [--case NAME]
"""
import numpy as np

from harness import check, expect, main, path, run, test, write

RNG = np.random.default_rng(2024)


def weights(shape):
    w = RNG.random(shape).astype(np.float32)
    return w / w.sum(-1, keepdims=True)


def same_as_stdin(name, args):
    """The picture of TMP/name mapped equals the one of its bytes on stdin."""
    with open(path(name), "rb") as f:
        data = f.read()
    args = args + ["--title", "t"]  # the default title is the file's name
    for ext in ("png", "svg"):
        mapped = expect(["heatmap", name, "-o", "-", "--format", ext] + args,
                        name=f"{name} {ext} {args} mapped")
        code, piped, err = run(["heatmap", "-", "-o", "-", "--format", ext] + args, stdin=data)
        check(f"{name} {ext} {args}: same bytes as through stdin",
              code == 0 and len(mapped) > 0 and mapped == piped, f"exit {code}: {err[:200]}")


@test("float32 [H, Lq, Lk], pooled: same picture as the reading path")
def _pooled():
    write("w4.npy", weights((4, 700, 650)))
    same_as_stdin("w4.npy", [])
    same_as_stdin("w4.npy", ["--pool", "mean", "--head", "2"])


@test("float32 [Lq, Lk] with zeros hatched: same picture")
def _masked_zero():
    w = weights((30, 30))
    w[np.triu_indices(30, 1)] = 0
    write("wz.npy", w)
    same_as_stdin("wz.npy", ["--masked-zero"])


@test("stacked layers [layers, H, Lq, Lk]: same model view")
def _layers():
    write("w5.npy", weights((2, 1, 3, 40, 40)))
    same_as_stdin("w5.npy", [])


@test("decoded dtypes and layouts: same picture")
def _decoded():
    w = weights((2, 50, 60))
    np.save(path("f8.npy"), w.astype(np.float64))
    np.save(path("fortran.npy"), np.asfortranarray(w))
    np.save(path("big.npy"), w.astype(">f4"))
    for name in ("f8.npy", "fortran.npy", "big.npy"):
        same_as_stdin(name, [])


@test("a truncated .npy: exit 2 naming the file")
def _truncated():
    write("t.npy", weights((3, 20, 20)))
    with open(path("t.npy"), "rb") as f:
        data = f.read()
    with open(path("t.npy"), "wb") as f:
        f.write(data[:-4])
    expect(["heatmap", "t.npy", "-o", "t.png"], code=2, err=r"t\.npy: ")


if __name__ == "__main__":
    main()
