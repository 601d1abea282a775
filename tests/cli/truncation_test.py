#!/usr/bin/env python3
"""A file that another process truncates while attn has it mapped (a .npy drawn in place,
a .gguf model) is the usual one-line error naming the file, exit 2, and no output file,
not a SIGBUS. The test pauses attn after it maps the file (ATTN_TEST_MAPPED_PAUSE names a
FIFO the first mapping waits on), cuts the file, then lets attn read on.

Run: /usr/bin/python3 tests/cli/truncation_test.py PATH/TO/attn [--case NAME]
"""
import errno
import os
import shutil
import subprocess
import time

import numpy as np

import harness
from harness import ROOT, TMP, check, main, one_error_line, path, test

LLAMA = os.path.join(ROOT, "tests", "unit", "fixtures", "gguf", "models", "llama.gguf")


def cut_while_mapped(args, victim, size, output):
    """Runs attn with args, truncates `victim` to `size` bytes once attn has mapped it, and
    checks: exit 2, one error line saying the file changed, `output` not written."""
    fifo = path("pause.fifo")
    if os.path.exists(fifo):
        os.unlink(fifo)
    os.mkfifo(fifo)
    env = dict(os.environ, ATTN_TEST_MAPPED_PAUSE=fifo)
    p = subprocess.Popen([harness.ATTN] + args, cwd=TMP, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    fd, deadline = -1, time.monotonic() + 60
    while fd < 0 and p.poll() is None and time.monotonic() < deadline:
        try:  # succeeds once attn has opened the FIFO to wait on it: the file is mapped
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno != errno.ENXIO:
                raise
            time.sleep(0.01)
    if check(f"{args}: attn waits on the FIFO", fd >= 0, f"exit {p.poll()}"):
        os.truncate(victim, size)
        os.write(fd, b"x")
        os.close(fd)
    try:
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    err = err.decode("utf-8", "replace")
    name = os.path.basename(victim)
    check(f"{args}: exit 2", p.returncode == 2, f"exit {p.returncode}; stderr={err[:300]!r}")
    check(f"{args}: one line naming the file", one_error_line(err) and
          f"{name}: changed while it was being read" in err, repr(err[:300]))
    check(f"{args}: no output", not os.path.exists(path(output)), os.listdir(TMP))


def weights(shape, dtype=np.float32):
    w = np.random.default_rng(7).random(shape).astype(np.float32)
    return (w / w.sum(-1, keepdims=True)).astype(dtype)


@test("heatmap of a float32 .npy cut inside its values (read in place)")
def _in_place():
    np.save(path("w.npy"), weights((4, 256, 256)))
    cut_while_mapped(["heatmap", "w.npy", "-o", "w.png"], path("w.npy"), 128 + 4096, "w.png")


@test("heatmap of a float32 .npy cut to nothing (its header)")
def _header():
    np.save(path("h.npy"), weights((2, 64, 64)))
    cut_while_mapped(["heatmap", "h.npy", "-o", "h.html"], path("h.npy"), 0, "h.html")


@test("heatmap of a float64 .npy cut inside its values (decoded)")
def _decoded():
    np.save(path("d.npy"), weights((2, 128, 128), np.float64))
    cut_while_mapped(["heatmap", "d.npy", "-o", "d.svg"], path("d.npy"), 8192, "d.svg")


@test("compute over a .gguf model cut inside its tensors")
def _gguf():
    shutil.copy(LLAMA, path("m.gguf"))
    with open(path("ids.json"), "w") as f:
        f.write("[1, 2, 3]")
    size = os.path.getsize(path("m.gguf"))
    cut_while_mapped(["compute", "--params", "m.gguf", "--token-ids", "ids.json", "-o", "out.npy"],
                     path("m.gguf"), size - 8192, "out.npy")


if __name__ == "__main__":
    main()
