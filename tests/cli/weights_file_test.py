#!/usr/bin/env python3
"""`--weights FILE.npy` written by the kernel, block by block, into the file
(io::NpyFileWriter): the same bytes as the encoder writes to stdout (`--weights - --format
npy`), numpy's float64 weights, every layer of a checkpoint in one file, and nothing left behind by a
failed run: RLIMIT_FSIZE, a full disk (a 64 KiB tmpfs, when mount works), SIGKILL
mid-way (the file has no name until it is complete).

Run: /usr/bin/python3 tests/cli/weights_file_test.py PATH/TO/attn [--case NAME]
"""
import os
import resource
import signal
import subprocess
import sys
import time

import numpy as np

import harness
from harness import check, expect, main, path, run, skip, test, write, TMP

sys.path.insert(0, os.path.join(harness.ROOT, "tests", "oracle"))
import reference as ref  # noqa: E402

RNG = np.random.default_rng(24)
SENTINEL = b"PRE-EXISTING WEIGHTS: must survive any failed run\n"


def qkv(prefix, shape):
    for n in "qkv":
        write(f"{prefix}{n}.npy", RNG.standard_normal(shape).astype(np.float32))
    return ["-q", f"{prefix}q.npy", "-k", f"{prefix}k.npy", "-v", f"{prefix}v.npy"]


def softmax_weights(prefix, causal=False):
    """numpy float64 weights of the files' float32 q, k, v (the reference's rule)."""
    q, k = (np.load(path(f"{prefix}{n}.npy")).astype(np.float64) for n in "qk")
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    s -= s.max(-1, keepdims=True)
    w = np.exp(s)
    return w / w.sum(-1, keepdims=True)


def encoded(args):
    """The encoder's bytes of the same weights: --weights - --format npy (stdout)."""
    code, out, err = run(args + ["--weights", "-", "--format", "npy"])
    check("stdout run exit 0", code == 0, err)
    return out


def bytes_of(name):
    with open(path(name), "rb") as f:
        return f.read()


@test("rank-4 weights: the encoder's bytes and numpy's values")
def _rank4():
    args = ["compute"] + qkv("a", (2, 3, 70, 16)) + ["--causal"]
    expect(args + ["--weights", "w.npy", "-o", "o.npy"])
    got = bytes_of("w.npy")
    check("same bytes as the encoder", got == encoded(args), f"{len(got)} bytes")
    w = np.load(path("w.npy"))
    want = softmax_weights("a", causal=True)
    check("numpy's weights", w.shape == want.shape and np.allclose(w, want, atol=2e-6),
          f"{w.shape} vs {want.shape}")
    check("file mode follows the umask", os.stat(path("w.npy")).st_mode & 0o777 ==
          0o666 & ~current_umask(), oct(os.stat(path("w.npy")).st_mode))


def current_umask():
    m = os.umask(0)
    os.umask(m)
    return m


@test("projected sources, one head dropped: the encoder's bytes; replaces an old file")
def _projected():
    write("x.npy", RNG.standard_normal((9, 12)).astype(np.float32))
    with open(path("w2.npy"), "wb") as f:
        f.write(SENTINEL)
    args = ["compute", "--input", "x.npy", "--seed", "3"]
    expect(args + ["--weights", "w2.npy"])
    check("old file replaced, encoder's bytes", bytes_of("w2.npy") == encoded(args),
          str(len(bytes_of("w2.npy"))))
    check("no other file left", sorted(n for n in os.listdir(TMP) if "w2" in n) == ["w2.npy"],
          str(os.listdir(TMP)))


def checkpoint(name, layers, E, H):
    tensors = {}
    for l in range(layers):
        for k, shape in (("w_q", (E, E)), ("w_k", (E, E)), ("w_v", (E, E)), ("w_o", (E, E))):
            tensors[f"layers.{l}.attn.{k}"] = RNG.standard_normal(shape) / np.sqrt(E)
    ref.write_safetensors(path(name), [(k, "F32", tensors[k]) for k in sorted(tensors)])


@test("every layer of a checkpoint into one file, in the selected order")
def _stack():
    checkpoint("ck.safetensors", 3, 8, 2)
    write("hs.npy", RNG.standard_normal((4, 5, 8)).astype(np.float32))
    base = ["compute", "--hidden-states", "hs.npy", "--params", "ck.safetensors", "--heads", "2"]
    for layers in ("0,1,2", "2,0"):
        args = base + ["--layers", layers]
        expect(args + ["--weights", "ws.npy"])
        w = np.load(path("ws.npy"))
        check(f"layers {layers}: [layers, H, L, L]", w.shape == (len(layers.split(",")), 2, 5, 5),
              str(w.shape))
        check(f"layers {layers}: the encoder's bytes", bytes_of("ws.npy") == encoded(args), "")


@test("f64 and --dtype f64 keep the encoder's path: same values")
def _f64():
    args = ["compute"] + qkv("d", (1, 2, 20, 8))
    expect(args + ["--weights", "w32.npy"])
    expect(args + ["--weights", "w64.npy", "--dtype", "f64"])
    a, b = np.load(path("w32.npy")), np.load(path("w64.npy"))
    check("f64 file holds the float32 weights", b.dtype == np.float64 and
          np.array_equal(a.astype(np.float64), b), f"{a.dtype} {b.dtype}")


def same_halves(a, b):
    return a.dtype == np.float16 and np.array_equal(a.view(np.uint16), b.view(np.uint16))


@test("--weights-dtype f16: numpy's astype(float16), in every way the weights are written")
def _f16():
    args = ["compute"] + qkv("h", (1, 2, 50, 16)) + ["--causal"]
    write("hq.npy", 3 * np.load(path("hq.npy")))  # peaked rows: weights down to e^-30
    expect(args + ["--weights", "h32.npy"])
    want = np.load(path("h32.npy")).astype(np.float16)
    subnormal = ((want.view(np.uint16) & 0x7c00) == 0) & (want != 0)
    check("the weights reach float16 subnormals", subnormal.any(), "")
    f16 = ["--weights-dtype", "f16"]
    expect(args + f16 + ["--weights", "h16.npy"])  # written by the kernel, block by block
    check("mapped file", same_halves(np.load(path("h16.npy")), want), "")
    expect(args + f16 + ["--weights", "h16h.npy", "--heatmap", "h.png"])  # from memory
    check("encoded file", same_halves(np.load(path("h16h.npy")), want), "")
    expect(args + f16 + ["--output", "h.npz"])
    z = np.load(path("h.npz"))
    check(".npz member; the output stays float32",
          same_halves(z["weights"], want) and z["output"].dtype == np.float32, str(z.files))
    # precision f64: rounded once from the float64 weights, not through float32
    expect(args + ["--precision", "f64", "--dtype", "f64", "--weights", "h64.npy"])
    expect(args + ["--precision", "f64"] + f16 + ["--weights", "h16d.npy"])
    check("from float64", same_halves(np.load(path("h16d.npy")),
                                      np.load(path("h64.npy")).astype(np.float16)), "")


@test("--weights-dtype f16 with weights written as text: refused before the work")
def _f16_refused():
    args = ["compute"] + qkv("r", (1, 1, 4, 8)) + ["--weights-dtype", "f16"]
    expect(args, code=2, err=r"--weights-dtype f16: .* as JSON text")
    expect(args + ["--weights", "r.json"], code=2, err=r"--weights-dtype f16: .* as JSON text")
    expect(args + ["--no-weights", "-o", "r.npy"], code=2, err=r"nowhere \(--no-weights\)")
    expect(args + ["--weights-dtype", "f8"], code=2, err=r"--weights-dtype")


@test("RLIMIT_FSIZE: exit 1, old file intact, nothing left")
def _fsize():
    args = ["compute"] + qkv("f", (1, 2, 200, 16))
    with open(path("wf.npy"), "wb") as f:
        f.write(SENTINEL)
    before = sorted(os.listdir(TMP))

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, resource.RLIM_INFINITY))
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # attn ignores it itself

    p = subprocess.run([harness.ATTN] + args + ["--weights", "wf.npy"], cwd=TMP,
                       capture_output=True, preexec_fn=limit, timeout=120)
    err = p.stderr.decode()
    check("exit 1 naming the file", p.returncode == 1 and "wf.npy: cannot write: File too large"
          in err and len(err.strip().splitlines()) == 1, f"exit {p.returncode}: {err!r}")
    check("old file intact, nothing left", bytes_of("wf.npy") == SENTINEL and
          sorted(os.listdir(TMP)) == before, str(sorted(set(os.listdir(TMP)) - set(before))))


@test("full disk: exit 1, old file intact, nothing left")
def _full_disk():
    mnt = path("mnt")
    os.mkdir(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt],
                      capture_output=True).returncode != 0:
        skip("full disk (cannot mount a tmpfs here)")
        return
    try:
        args = ["compute"] + qkv("g", (1, 2, 200, 16))
        target = os.path.join(mnt, "w.npy")
        with open(target, "wb") as f:
            f.write(SENTINEL)
        code, _, err = run(args + ["--weights", target])
        check("exit 1: no space", code == 1 and "No space left on device" in err, err)
        with open(target, "rb") as f:
            old = f.read()
        check("old file intact, nothing left", old == SENTINEL and os.listdir(mnt) == ["w.npy"],
              str(os.listdir(mnt)))
    finally:
        subprocess.run(["umount", mnt], capture_output=True)


def writing_into(pid, folder):
    """True once process pid holds an unnamed file of `folder` open (O_TMPFILE shows as
    'FOLDER/#INODE (deleted)')."""
    fds = f"/proc/{pid}/fd"
    try:
        for fd in os.listdir(fds):
            target = os.readlink(os.path.join(fds, fd))
            if target.startswith(folder + "/#") or target.startswith(folder + "/.w"):
                return True
    except OSError:
        pass
    return False


@test("SIGKILL mid-way: old file intact, nothing left")
def _killed():
    args = ["compute"] + qkv("s", (1, 8, 1536, 64))  # 75 MB of weights
    with open(path("wk.npy"), "wb") as f:
        f.write(SENTINEL)
    before = sorted(os.listdir(TMP))
    p = subprocess.Popen([harness.ATTN] + args + ["--weights", "wk.npy", "--threads", "1"],
                         cwd=TMP, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    caught = False
    deadline = time.time() + 60
    while p.poll() is None and time.time() < deadline:
        if writing_into(p.pid, os.path.realpath(TMP)):
            time.sleep(0.05)  # into the kernel's work
            p.send_signal(signal.SIGKILL)
            caught = True
            break
    p.wait(timeout=60)
    if not caught:
        skip("SIGKILL mid-way (the run was too quick to catch)")
        return
    check("killed", p.returncode == -signal.SIGKILL, str(p.returncode))
    check("old file intact, nothing left", bytes_of("wk.npy") == SENTINEL and
          sorted(os.listdir(TMP)) == before, str(sorted(set(os.listdir(TMP)) - set(before))))


if __name__ == "__main__":
    main()
