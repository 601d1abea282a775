"""What the numpy oracle of `attn compute` (oracle_test.py) runs on: the problem data
(random float32-exact arrays, how each array field is stored: inline, .npy, .json, a params
file), the table of cases and error cases the generators fill, and running one case through
the binary and comparing it with reference.py under a float32-derived tolerance (values,
exact zeros of blocked weights and fully masked rows, the fully-masked warning).
"""

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as ref  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from leak_rule import leak_env  # noqa: E402  (which runs check for leaks)

EPS32 = 1.2e-7     # float32 unit roundoff (2^-23), rounded up
TOL_C = 8.0        # the modest constant in front of every tolerance
SIZES = (1, 2, 3, 31, 32, 33, 63, 64, 65, 113)

RNG = np.random.default_rng(20240611)


# ============================================================================ problem data

class Arr:
    """An array field and how it is stored: inline JSON, or a file the problem names.
    store: inline | npy32 | npy64 | json | npy-bool | npy-u8 | npy-i64
    inline_as (masks): bool | int | float."""

    def __init__(self, a, store="inline", inline_as=None):
        self.a = np.asarray(a)
        self.store = store
        self.inline_as = inline_as

    def value(self):
        """The exact values the file (or JSON) holds, as float64."""
        if self.store == "npy32":
            return self.a.astype(np.float32).astype(np.float64)
        return self.a.astype(np.float64)


class ParamsFile:
    """`params` given as a path to a .json file holding the object."""

    def __init__(self, params, relpath="params.json"):
        self.params = params
        self.relpath = relpath


def f32(a):
    """Values exactly representable in float32, so JSON text, .npy files and the
    reference all hold the same numbers."""
    return np.asarray(a, dtype=np.float64).astype(np.float32).astype(np.float64)


def rn(*shape, s=1.0):
    return f32(RNG.standard_normal(shape) * s)


def rmask(shape, keep=0.7):
    return RNG.random(shape) < keep


def rbias(shape, p_inf=0.2, s=1.0):
    b = rn(*shape, s=s)
    b[RNG.random(shape) < p_inf] = -np.inf
    return b


def _json_num(x):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(x)


def _to_json_list(a, inline_as=None):
    a = np.asarray(a)
    if a.dtype == bool or inline_as == "bool":
        if inline_as == "int":
            return a.astype(np.int64).tolist()
        if inline_as == "float":
            return a.astype(np.float64).tolist()
        return (a != 0).tolist()
    if inline_as == "int":
        return a.astype(np.int64).tolist()
    flat = [_json_num(x) for x in a.astype(np.float64).ravel().tolist()]
    if a.ndim == 0:
        return flat[0]
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(a.shape).tolist()


def write_arr(arr, folder, stem):
    """Writes arr to folder/data/stem.EXT per its store; returns the relative path."""
    os.makedirs(os.path.join(folder, "data"), exist_ok=True)
    if arr.store == "json":
        rel = "data/%s.json" % stem
        with open(os.path.join(folder, rel), "w") as f:
            json.dump(_to_json_list(arr.a, arr.inline_as), f)
        return rel
    rel = "data/%s.npy" % stem
    dtype = {"npy32": np.float32, "npy64": np.float64, "npy-bool": np.bool_,
             "npy-u8": np.uint8, "npy-i64": np.int64}[arr.store]
    a = arr.a != 0 if arr.store == "npy-bool" else arr.a
    np.save(os.path.join(folder, rel), np.ascontiguousarray(a.astype(dtype)))
    return rel


def materialize(value, folder, stem):
    """Problem value -> JSON value, writing array files into folder."""
    if isinstance(value, Arr):
        if value.store == "inline":
            return _to_json_list(value.a, value.inline_as)
        return write_arr(value, folder, stem)
    if isinstance(value, ParamsFile):
        body = {k: materialize(v, folder, "%s_%s" % (stem, k.replace(".", "_")))
                for k, v in value.params.items()}
        path = os.path.join(folder, value.relpath)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # array paths inside a params file are written relative to that file
        # (reference.py's DECISION); the cases here keep them inline
        with open(path, "w") as f:
            json.dump({k: (v if not isinstance(v, str) else
                           os.path.relpath(os.path.join(folder, v), os.path.dirname(path)))
                       for k, v in body.items()}, f)
        return value.relpath
    if isinstance(value, dict):
        return {k: materialize(v, folder, "%s_%s" % (stem, k.replace(".", "_")))
                for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return _to_json_list(value)
    return value


def plain(value):
    """Problem value -> what reference.load_problem accepts without files."""
    if isinstance(value, Arr):
        return value.value()
    if isinstance(value, ParamsFile):
        return {k: plain(v) for k, v in value.params.items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


# ============================================================================ cases

class Case:
    def __init__(self, name, problem, *, where="file", args=(), files=None,
                 ref_extra=None, out="stdout", check_echo=False):
        self.name = name
        self.problem = problem      # dict (values may be Arr / ParamsFile) or None
        self.where = where          # file | stdin | none
        self.args = list(args)      # extra CLI args; paths relative to the case folder
        self.files = files or {}    # relpath (case folder) -> Arr, for flags
        self.ref_extra = ref_extra or {}  # fields the flags set, for the reference
        self.out = out              # stdout | npy | json | no-weights | no-weights-npy
        self.check_echo = check_echo


class ErrorCase:
    def __init__(self, name, problem, args=()):
        self.name = name
        self.problem = problem
        self.args = list(args)


CASES = []
ERRORS = []


def add(name, problem, **kw):
    CASES.append(Case(name, problem, **kw))


def pick(seq):
    return seq[int(RNG.integers(len(seq)))]


def qkv(rank, B, H, Hkv, Lq, Lk, D, Dv, s=1.0):
    """Direct Q, K, V for a rank: 2/3 carry heads in the features, 4 in dim 1."""
    if rank == 4:
        return (rn(B, H, Lq, D, s=s), rn(B, Hkv, Lk, D, s=s), rn(B, Hkv, Lk, Dv, s=s))
    lead = (B,) if rank == 3 else ()
    return (rn(*lead, Lq, H * D, s=s), rn(*lead, Lk, Hkv * D, s=s),
            rn(*lead, Lk, Hkv * Dv, s=s))


def mask_shape(kind, B, H, Lq, Lk):
    return {"2": (Lq, Lk), "3B": (B, Lq, Lk), "31": (1, Lq, Lk), "4BH": (B, H, Lq, Lk),
            "41H": (1, H, Lq, Lk), "4B1": (B, 1, Lq, Lk), "411": (1, 1, Lq, Lk),
            # Broadcast as SDPA does (numpy's rule; rank 3 stays [B, Lq, Lk]).
            "4B11k": (B, 1, 1, Lk), "4111k": (1, 1, 1, Lk), "4BHq1": (B, H, Lq, 1),
            "41H1k": (1, H, 1, Lk), "4B1q1": (B, 1, Lq, 1), "21k": (1, Lk), "2q1": (Lq, 1),
            "1k": (Lk,), "11": (1,), "3B1k": (B, 1, Lk), "31q1": (1, Lq, 1)}[kind]


# ============================================================================ running

def parse_array(v):
    return np.array(ref._from_json_value(v), dtype=np.float64)


def tolerances(r):
    """Absolute tolerances for weights and output from the problem's magnitudes: a
    float32 pipeline's rounding error, with a modest constant."""
    m = r.mag
    ds = EPS32 * (math.sqrt(m.D) + math.sqrt(m.n_in) + 2.0) * (m.score + 1.0)
    w_atol = TOL_C * (ds + EPS32)
    vmag = max(m.value, 1e-30)
    a_atol = TOL_C * (ds + EPS32 * (math.sqrt(m.Lk) + math.sqrt(m.n_in) + 2.0)) * vmag
    if m.has_wo:
        o_atol = (a_atol + TOL_C * EPS32 * math.sqrt(m.H * m.Dv) * vmag) * m.wo_rowsum
    else:
        o_atol = a_atol
    return w_atol, o_atol


WORST = [0.0, ""]   # the largest |diff| / tolerance seen in a passing comparison


def compare(label, got, want, atol, rtol=TOL_C * EPS32, case_name=""):
    """None if close, else a message with the worst index and values."""
    if got.shape != want.shape:
        return "%s shape %s, expected %s" % (label, list(got.shape), list(want.shape))
    if got.size == 0:
        return None
    err = np.abs(got - want)
    bound = atol + rtol * np.abs(want)
    bad = ~(err <= bound)
    worst = float(np.max(np.where(np.isnan(err), np.inf, err / bound)))
    if worst > WORST[0] and not bad.any():
        WORST[0], WORST[1] = worst, "%s of %s" % (label, case_name)
    if not bad.any():
        return None
    ratio = np.where(bad, err / bound, 0)
    ratio[np.isnan(ratio)] = np.inf
    idx = np.unravel_index(int(np.argmax(ratio)), got.shape)
    return ("%s mismatch at %s: got %.9g expected %.9g (|diff| %.3g > tol %.3g; %d of %d bad)"
            % (label, list(idx), got[idx], want[idx], err[idx], bound[idx], int(bad.sum()),
               got.size))


def check_weights_structure(w, r):
    """Blocked entries are exactly 0; live rows sum to 1; dead rows are all 0."""
    msgs = []
    allowed = r.allowed
    if w.shape != allowed.shape:
        return msgs
    if np.any(w[~allowed] != 0.0):
        idx = np.argwhere((~allowed) & (w != 0.0))[0]
        msgs.append("blocked weight at %s is %.9g, expected exactly 0" % (list(idx),
                                                                          w[tuple(idx)]))
    live = allowed.any(axis=-1)
    sums = w.sum(axis=-1)
    Lk = w.shape[-1]
    tol = 1e-5 + 2 * Lk * EPS32
    bad = live & ~(np.abs(sums - 1.0) <= tol)
    if bad.any():
        idx = np.argwhere(bad)[0]
        msgs.append("weights row %s sums to %.9g" % (list(idx), sums[tuple(idx)]))
    if np.any(w[~live] != 0.0):
        idx = np.argwhere(~live)[0]
        msgs.append("fully masked weights row %s not all exactly 0" % list(idx))
    return msgs


def check_dead_output(out, r):
    """Without an output projection, a fully masked query row's output is exactly 0
    (in the features of the heads where it is fully masked)."""
    if r.has_wo or r.rows_masked_bh == 0:
        return []
    dead = r.dead                                    # [B, H, Lq]
    if out.ndim == 4:                                # rank 4: [B, H, Lq, Dv]
        rows = np.broadcast_to(dead[..., None], dead.shape + (r.mag.Dv,))
    else:                                            # merged: [B, Lq, H*Dv] or [Lq, H*Dv]
        rows = np.repeat(dead.transpose(0, 2, 1), r.mag.Dv, axis=2)
        if out.ndim == 2:
            rows = rows[0]
    if rows.shape != out.shape:
        return []
    if np.any(out[rows] != 0.0):
        idx = np.argwhere(rows & (out != 0.0))[0]
        return ["output at %s of a fully masked row is %.9g, expected exactly 0"
                % (list(idx), out[tuple(idx)])]
    return []


def run(binary, args, cwd, stdin_text=None):
    try:
        p = subprocess.run([binary] + args, cwd=cwd, input=stdin_text, capture_output=True,
                           text=True, timeout=60, env=leak_env(args, cwd, stdin_text))
        return p.returncode, p.stdout, p.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "", str(e)


def run_case(binary, case, folder):
    """Returns a list of failure messages."""
    pdir = os.path.join(folder, "p")
    os.makedirs(pdir, exist_ok=True)
    for rel, arr in case.files.items():
        path = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        dtype = {"npy32": np.float32, "npy64": np.float64, "npy-bool": np.bool_}[arr.store]
        np.save(path, arr.a.astype(dtype))

    args = ["compute"]
    stdin_text = None
    if case.where == "file":
        doc = materialize(case.problem, pdir, "f")
        with open(os.path.join(pdir, "problem.json"), "w") as f:
            json.dump(doc, f)
        args.append("p/problem.json")
        loaded = ref.load_problem_file(os.path.join(pdir, "problem.json"))
    elif case.where == "stdin":
        doc = materialize(case.problem, folder, "f")
        stdin_text = json.dumps(doc)
        args.append("-")
        loaded = ref.load_problem(doc, folder)
    else:
        loaded = {}
    args += case.args
    loaded.update(plain(case.ref_extra))
    if "init" in case.ref_extra and isinstance(case.problem, dict):
        loaded["init"] = dict(case.problem.get("init", {}), **case.ref_extra["init"])

    if case.out in ("npy", "json"):
        args += ["--output", "out." + case.out, "--weights", "w." + case.out]
    elif case.out == "no-weights":
        args += ["--no-weights"]
    elif case.out == "no-weights-npy":
        args += ["--no-weights", "--output", "out.npy"]

    r = ref.compute_full(loaded)
    code, stdout, stderr = run(binary, args, folder, stdin_text)
    if code != 0:
        return ["exit code %s (stderr: %s)" % (code, stderr.strip()[:300])]

    fails = []
    got_w = None
    if case.out in ("npy", "json", "no-weights-npy"):
        def load_out(name):
            path = os.path.join(folder, name)
            if not os.path.exists(path):
                fails.append("%s not written" % name)
                return None
            if name.endswith(".npy"):
                return np.load(path).astype(np.float64)
            with open(path) as f:
                return parse_array(json.load(f))
        got_o = load_out("out." + ("json" if case.out == "json" else "npy"))
        if case.out != "no-weights-npy":
            got_w = load_out("w." + case.out)
        if got_o is None:
            return fails
    else:
        try:
            doc = json.loads(stdout)
        except ValueError as e:
            return ["stdout is not JSON (%s): %r" % (e, stdout[:200])]
        if not isinstance(doc, dict) or "output" not in doc:
            return ["stdout has no \"output\": %r" % stdout[:200]]
        got_o = parse_array(doc["output"])
        if case.out == "no-weights":
            if doc.get("weights") is not None:
                fails.append("--no-weights but the result has weights")
        elif "weights" not in doc:
            fails.append("result has no \"weights\"")
        else:
            got_w = parse_array(doc["weights"])
        if case.check_echo:
            for key in ("id", "query_tokens", "key_tokens"):
                want = case.problem.get(key)
                if key != "id" and "tokens" in case.problem:
                    want = case.problem["tokens"]
                if want is not None and doc.get(key) != want:
                    fails.append("%s echoed as %r, expected %r" % (key, doc.get(key), want))

    w_atol, o_atol = tolerances(r)
    msg = compare("output", got_o, r.output, o_atol, case_name=case.name)
    if msg:
        fails.append(msg)
    else:
        fails += check_dead_output(got_o, r)
    if got_w is not None:
        msg = compare("weights", got_w, r.weights, w_atol, case_name=case.name)
        if msg:
            fails.append(msg)
        fails += check_weights_structure(got_w, r)

    # The fully-masked warning says how many rows; none when there are none.
    low = stderr.lower()
    if r.rows_masked_bh:
        nums = {int(x) for x in re.findall(r"\d+", stderr)}
        if "warning" not in low:
            fails.append("no warning on stderr for %d fully masked rows" % r.rows_masked_bh)
        elif not ({r.rows_masked_bh, r.rows_masked_b} & nums):
            fails.append("warning does not give the row count (%d rows x heads, %d query "
                         "rows): %r" % (r.rows_masked_bh, r.rows_masked_b, stderr.strip()))
    elif "warning" in low:
        fails.append("unexpected warning with no fully masked rows: %r" % stderr.strip()[:200])
    return fails


def run_error(binary, case, folder):
    pdir = os.path.join(folder, "p")
    os.makedirs(pdir, exist_ok=True)
    doc = materialize(case.problem, pdir, "f")
    with open(os.path.join(pdir, "problem.json"), "w") as f:
        json.dump(doc, f)
    code, _, stderr = run(binary, ["compute", "p/problem.json"] + case.args, folder)
    fails = []
    if code != 2:
        fails.append("exit code %s, expected 2 (stderr: %s)" % (code, stderr.strip()[:200]))
    lines = [x for x in stderr.splitlines() if x.strip()]
    if not lines or not lines[0].startswith("attn: error:"):
        fails.append("stderr does not start with \"attn: error:\": %r" % stderr[:200])
    return fails


def main(generators):
    """Runs every generator (in order: they share RNG), then every case through the binary
    named on the command line; prints the failures and "N passed, M failed"."""
    if len(sys.argv) != 2:
        print("usage: oracle_test.py PATH/TO/attn", file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[1])
    start = time.time()
    for gen in generators:
        gen()
    passed = failed = 0
    root = tempfile.mkdtemp(prefix="attn_oracle_")
    try:
        for n, case in enumerate(CASES + ERRORS):
            folder = os.path.join(root, "c%03d" % n)
            os.makedirs(folder)
            try:
                if isinstance(case, ErrorCase):
                    fails = run_error(binary, case, folder)
                else:
                    fails = run_case(binary, case, folder)
            except Exception as e:  # a bug in this script or the reference: still report
                fails = ["test harness exception: %s: %s" % (type(e).__name__, e)]
            kind = "error" if isinstance(case, ErrorCase) else "case"
            if fails:
                failed += 1
                for msg in fails:
                    print("FAIL %s %d [%s]: %s" % (kind, n, case.name, msg))
            else:
                passed += 1
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("(%d problems, %d error cases, %.1f s; worst |diff|/tolerance %.3g, in %s)"
          % (len(CASES), len(ERRORS), time.time() - start, WORST[0], WORST[1] or "-"))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0
