#!/usr/bin/env python3
"""Hostile and unusual inputs against the attn binary: tests/bad_input/manifest.json.

Every "bad" case must exit with its code (2 for bad input) and exactly one stderr line
"attn: error: ..." matching its regex, must not crash (no sanitizer report, no signal),
and must leave the folder as it was: a pre-existing output untouched, no new output, no
temp file. Every "valid" case must succeed with the values numpy computes in float64.
Then the failures of the file system: a full disk (a 64 KiB tmpfs, when mount works),
RLIMIT_FSIZE, and SIGINT in the middle of a write.

Run from the repository root: /usr/bin/python3 tests/cli/bad_input_test.py PATH/TO/attn
Ends with the line "N passed, M failed"; exits 1 if any case failed.
"""
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time

import harness
from leak_rule import leak_env
from harness import ROOT, TMP, check, keep, main, skip, test

# numpy is imported only by the cases that compute a reference: most of the 150-odd cases
# (each its own process) need none.
CORPUS = os.path.join(ROOT, "tests", "bad_input")
MANIFEST = json.load(open(os.path.join(CORPUS, "manifest.json")))
SENTINEL = b"PRE-EXISTING OUTPUT: must survive any failed run\n"
CRASH_MARKS = ("Sanitizer", "runtime error:", "terminate called", "Segmentation", "Aborted",
               "core dumped", "internal error")

def pristine():
    """One copy of files/ plus the generated big files; cases get hard-linked copies. A
    process that runs one case (--case) generates only the big files that case names."""
    base = os.path.join(TMP, "pristine")
    shutil.copytree(os.path.join(CORPUS, "files"), base)
    for name, parts in MANIFEST["generated"].items():
        if NEEDED is not None and name not in NEEDED:
            continue
        with open(os.path.join(base, name), "wb") as f:
            for text, count in parts:
                f.write(text.encode("latin-1") * count)
    return base


PRISTINE = None
NEEDED = None  # the generated files the one case run names; None: all of them


def fresh_dir(name):
    global PRISTINE
    if PRISTINE is None:
        PRISTINE = keep(pristine())
    d = os.path.join(TMP, "case-" + re.sub(r"[^A-Za-z0-9_.-]", "_", name))
    # Hard links: attn replaces files by rename (the pristine copy keeps its inode) and the
    # snapshot below catches any in-place change.
    shutil.copytree(PRISTINE, d, copy_function=os.link)
    return d


def snapshot(d):
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            st = os.lstat(p)
            out[os.path.relpath(p, d)] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return out


def run(args, cwd, stdin_file=None, timeout=60, preexec=None):
    stdin = open(os.path.join(cwd, stdin_file), "rb") if stdin_file else subprocess.DEVNULL
    try:
        p = subprocess.run([harness.ATTN] + args, stdin=stdin, capture_output=True, cwd=cwd,
                           timeout=timeout, preexec_fn=preexec,
                           env=leak_env(args, cwd, stdin_file))
        return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return None, b"", "timeout"
    finally:
        if stdin_file:
            stdin.close()


def one_error_line(stderr):
    lines = stderr.strip("\n").split("\n")
    return len(lines) == 1 and lines[0].startswith("attn: error: ")


HELP = None


def available(flag):
    global HELP
    if HELP is None:
        HELP = run(["compute", "--help"], TMP)[1].decode("utf-8", "replace")
    return flag is None or re.search(re.escape(flag) + r"\b", HELP) is not None


# --- bad inputs ---------------------------------------------------------------------------
def bad_case(c):
    name = c["name"]
    if not available(c.get("requires")):
        skip(f"{name} (needs {c['requires']})")
        return
    d = fresh_dir(name)
    args = list(c["args"])
    outputs = c.get("outputs", True) and args[:1] == ["compute"]
    if outputs:
        with open(os.path.join(d, "out.npy"), "wb") as f:
            f.write(SENTINEL)
        args += ["-o", "out.npy", "--weights", "w.json"]
    before = snapshot(d)
    rc, _, se = run(args, d, c.get("stdin"))
    detail = f"exit {rc} (want {c['exit']}); stderr={se.strip()[:400]!r}"
    ok = rc == c["exit"]
    if ok:
        ok = one_error_line(se) and not any(m in se for m in CRASH_MARKS)
        detail += "; want exactly one 'attn: error:' line and no crash report"
    if ok:
        ok = re.search(c["stderr"], se.strip()) is not None
        detail += f"; stderr !~ {c['stderr']!r}"
    after = snapshot(d)
    if ok and after != before:
        ok = False
        added = sorted(set(after) - set(before))
        changed = sorted(k for k in before if k in after and after[k] != before[k])
        removed = sorted(set(before) - set(after))
        detail += f"; the folder changed: added {added}, changed {changed}, removed {removed}"
    if ok and outputs:
        ok = open(os.path.join(d, "out.npy"), "rb").read() == SENTINEL
        detail += "; the pre-existing output changed"
    check(f"bad: {name}", ok, detail)
    shutil.rmtree(d, ignore_errors=True)


def one_case(f, c):
    global NEEDED
    if "--case" in sys.argv:
        NEEDED = {n for n in MANIFEST["generated"] if os.path.splitext(n)[0] in json.dumps(c)}
    f(c)


for c in MANIFEST["bad"]:
    test("bad: " + c["name"])(lambda c=c: one_case(bad_case, c))


# --- valid but unusual inputs ---------------------------------------------------------------
def load(d, name):
    import numpy as np
    return np.load(os.path.join(d, name)).astype(np.float32).astype(np.float64)


def reference(d, ref):
    """softmax(Q Kᵀ scale) V in float64, from the files numpy reads itself."""
    import numpy as np
    if "problem" in ref:
        doc = json.load(open(os.path.join(d, ref["problem"])))
        arr = {k: np.array(doc[k], dtype=np.float32).astype(np.float64)
               for k in ("query", "key", "value")}
        q, k, v = arr["query"], arr["key"], arr["value"]
        scale, mask, kpm = doc.get("scale"), None, None
    else:
        q, k, v = (load(d, ref[n]) for n in ("query", "key", "value"))
        scale = ref.get("scale")
        mask = np.load(os.path.join(d, ref["mask"])) if "mask" in ref else None
        kpm = np.load(os.path.join(d, ref["key_padding_mask"])) if "key_padding_mask" in ref else None
    s = q @ np.swapaxes(k, -1, -2) * (scale if scale is not None else 1 / np.sqrt(q.shape[-1]))
    keep = np.ones(s.shape, bool)
    if mask is not None:
        keep &= mask != 0
    if kpm is not None:
        keep &= (kpm != 0)[..., None, :]
    s = np.where(keep, s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.where(keep, np.exp(s - m), 0)
    total = e.sum(-1, keepdims=True)
    w = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return w @ v, w


def close(a, b):
    import numpy as np
    a = np.asarray(a, dtype=np.float64)
    return a.shape == b.shape and np.allclose(a, b, rtol=2e-5, atol=2e-6)


def valid_case(c):
    import numpy as np
    d = fresh_dir("valid-" + c["name"])
    rc, so, se = run(c["args"], d)
    ok = rc == 0 and se == ""
    detail = f"exit {rc}; stderr={se.strip()[:300]!r}"
    if ok:
        try:
            doc = json.loads(so)
            out, w = reference(d, c["reference"])
            ok = close(doc["output"], out) and close(doc["weights"], w)
            detail += (f"; output/weights differ from numpy: got {np.asarray(doc['output']).shape}"
                       f" {str(doc['output'])[:200]}, want {out.shape} {out.tolist()!s:.200}")
        except Exception as e:  # noqa: BLE001 - report any checker failure
            ok = False
            detail += f"; check raised {e!r}"
    check(f"valid: {c['name']}", ok, detail)
    shutil.rmtree(d, ignore_errors=True)


for c in MANIFEST["valid"]:
    test("valid: " + c["name"])(lambda c=c: one_case(valid_case, c))


# --- a full disk, a file size limit, and signals during a write -------------------------------
def big_value(d, columns):
    """A value of 5 x columns, so the output is 3 x columns floats."""
    import numpy as np
    np.save(os.path.join(d, "bigv.npy"), np.ones((5, columns), np.float32))


def no_temp_files(d):
    return [n for n in os.listdir(d) if ".tmp." in n]


def full_disk():
    d = fresh_dir("full-disk")
    mnt = os.path.join(d, "mnt")
    os.mkdir(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt],
                      capture_output=True).returncode != 0:
        skip("full disk (cannot mount a tmpfs here)")
        return
    try:
        with open(os.path.join(mnt, "out.npy"), "wb") as f:
            f.write(SENTINEL)
        big_value(d, 20000)  # 240 KB of output on a 64 KiB file system
        rc, _, se = run(["compute", "-q", "q.npy", "-k", "k.npy", "-v", "bigv.npy",
                         "-o", os.path.join(mnt, "out.npy")], d)
        check("full disk: exit 1 with one error line",
              rc == 1 and one_error_line(se) and "No space left on device" in se,
              f"exit {rc}; stderr={se.strip()[:300]!r}")
        check("full disk: old output untouched, no temp file",
              open(os.path.join(mnt, "out.npy"), "rb").read() == SENTINEL and
              os.listdir(mnt) == ["out.npy"], str(os.listdir(mnt)))
    finally:
        subprocess.run(["umount", mnt], capture_output=True)


def file_size_limit(ignore_sigxfsz):
    d = fresh_dir(f"fsize-{ignore_sigxfsz}")
    with open(os.path.join(d, "out.npy"), "wb") as f:
        f.write(SENTINEL)
    big_value(d, 20000)
    before = set(os.listdir(d))

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (16384, resource.RLIM_INFINITY))
        if ignore_sigxfsz:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        else:
            signal.signal(signal.SIGXFSZ, signal.SIG_DFL)

    rc, _, se = run(["compute", "-q", "q.npy", "-k", "k.npy", "-v", "bigv.npy", "-o", "out.npy"],
                    d, preexec=limit)
    label = "RLIMIT_FSIZE" + (" (SIGXFSZ ignored by the caller)" if ignore_sigxfsz else "")
    check(f"{label}: exit 1 with one error line",
          rc == 1 and one_error_line(se) and "File too large" in se,
          f"exit {rc}; stderr={se.strip()[:300]!r}")
    check(f"{label}: old output untouched, no temp file",
          open(os.path.join(d, "out.npy"), "rb").read() == SENTINEL and
          set(os.listdir(d)) == before, str(sorted(set(os.listdir(d)) - before)))


def interrupted_write(sig):
    """Kills attn with `sig` while its temp file exists: the temp file must go, the old
    output must stay. Inconclusive (skipped) if the write was too quick to catch."""
    d = fresh_dir(f"signal-{sig}")
    with open(os.path.join(d, "out.npy"), "wb") as f:
        f.write(SENTINEL)
    big_value(d, 25_000_000 // 5)  # a 60 MB output: the write takes a while
    before = set(os.listdir(d))
    p = subprocess.Popen([harness.ATTN, "compute", "-q", "q.npy", "-k", "k.npy", "-v", "bigv.npy",
                          "-o", "out.npy", "--no-weights"], cwd=d,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    caught = False
    deadline = time.time() + 60
    while p.poll() is None and time.time() < deadline:
        if no_temp_files(d):
            p.send_signal(sig)
            caught = True
            break
    p.wait(timeout=60)
    p.stderr.close()
    if not caught:
        skip(f"signal {sig} during a write (the write was too quick to catch)")
        return
    check(f"signal {sig} mid-write: killed by the signal", p.returncode == -sig,
          f"exit {p.returncode}")
    check(f"signal {sig} mid-write: temp file removed, old output untouched",
          set(os.listdir(d)) == before and
          open(os.path.join(d, "out.npy"), "rb").read() == SENTINEL,
          str(sorted(set(os.listdir(d)) - before)))
    shutil.rmtree(d, ignore_errors=True)


# attn ignores SIGXFSZ itself (io::install_signal_cleanup) and removes temp files on
# SIGINT/SIGTERM: those cases run when --max-memory (same wiring) is in.
def when_wired(f, *args):
    if available("--max-memory"):
        f(*args)
    else:
        skip("RLIMIT_FSIZE without SIGXFSZ ignored, SIGINT/SIGTERM mid-write "
             "(need install_signal_cleanup in main)")


test("full disk")(full_disk)
test("RLIMIT_FSIZE, SIGXFSZ ignored by the caller")(lambda: file_size_limit(True))
test("RLIMIT_FSIZE")(lambda: when_wired(file_size_limit, False))
test("SIGINT mid-write")(lambda: when_wired(interrupted_write, signal.SIGINT))
test("SIGTERM mid-write")(lambda: when_wired(interrupted_write, signal.SIGTERM))

main()
