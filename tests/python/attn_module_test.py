"""The `attn` Python module against the CLI, the numpy float64 reference
(tests/oracle/reference.py) and torch's own nn.MultiheadAttention, in one process:

    PYTHONPATH=build/dev/python /usr/bin/python3 tests/python/attn_module_test.py build/dev/app/attn

Each test_* function is one check group; the script prints one line per failure and exits
1 if any failed. It also runs under ASan (CTest sets LD_PRELOAD for a sanitized module).
"""
import gc
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
import reference as ref  # noqa: E402

import attn  # noqa: E402

ATTN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
TMP = tempfile.mkdtemp(prefix="attn-python-")
# The CLI runs without the interpreter's preloaded sanitizer runtime (CTest's LD_PRELOAD for
# a sanitized module): a sanitized attn binary carries its own, and two ASan runtimes in one
# process refuse to start.
CLI_ENV = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
TESTS = []


def test(f):
    TESTS.append(f)
    return f


def rng(seed):
    return np.random.default_rng(seed)


def expect_input_errors(cases, exact=False):
    """Each (call, message) raises attn.InputError whose text contains the message (or,
    with exact, is it)."""
    for call, message in cases:
        try:
            call()
        except attn.InputError as e:
            assert (str(e) == message) if exact else (message in str(e)), (message, str(e))
        else:
            raise AssertionError("no InputError: " + message)


def cli(problem, *args):
    """Runs `attn compute` on a problem dict (arrays written as .npy files); returns
    (exit code, the result document or None, stderr)."""
    doc = {}
    for k, v in problem.items():
        if isinstance(v, np.ndarray):
            path = os.path.join(TMP, k + ".npy")
            np.save(path, v)
            doc[k] = path
        elif k == "params" and isinstance(v, dict):
            doc[k] = {}
            for pk, pv in v.items():
                path = os.path.join(TMP, "p_" + pk + ".npy")
                np.save(path, np.asarray(pv))
                doc[k][pk] = path
        else:
            doc[k] = v
    path = os.path.join(TMP, "problem.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    p = subprocess.run([ATTN, "compute", path, *args], capture_output=True, text=True,
                       env=CLI_ENV)
    out = json.loads(p.stdout) if p.returncode == 0 else None
    return p.returncode, out, p.stderr


def f32(x):
    return np.array(ref.num(x), dtype=np.float32)


# ----------------------------------------------------------------------------- problems

def problems():
    """A few problems that take different paths: rank-4 heads, rank-3 sources with heads
    and projections, masks, bias, GQA, cross-attention, diagnostics."""
    r = rng(1)
    q4 = r.standard_normal((2, 4, 5, 8), dtype=np.float32)
    k4 = r.standard_normal((2, 2, 7, 8), dtype=np.float32)
    v4 = r.standard_normal((2, 2, 7, 6), dtype=np.float32)
    x = r.standard_normal((2, 6, 8), dtype=np.float32)
    ctx = r.standard_normal((2, 5, 4), dtype=np.float32)
    w = {n: r.standard_normal((8, 8), dtype=np.float32) for n in ("w_q", "w_o")}
    w["w_k"] = r.standard_normal((8, 4), dtype=np.float32)
    w["w_v"] = r.standard_normal((8, 4), dtype=np.float32)
    w["b_q"] = r.standard_normal(8, dtype=np.float32)
    mask = (r.random((6, 6)) > 0.3) | np.eye(6, dtype=bool)
    return {
        "rank-4 gqa causal bottom-right": dict(query=q4, key=k4, value=v4,
                                               causal="bottom-right"),
        "rank-3 self heads mask": dict(input=x, key=x, value=x, num_heads=2,
                                       mask=mask),
        "cross params heads": dict(input=x, context=ctx, params=w, num_heads=2),
        "scale bias": dict(query=x, key=x, value=x, scale=0.5,
                           bias=r.standard_normal((6, 6), dtype=np.float32)),
    }


@test
def test_equals_the_cli():
    for name, p in problems().items():
        rc, doc, err = cli(p)
        assert rc == 0, (name, err)
        r = attn.compute(**p)
        assert np.array_equal(r.output, f32(doc["output"])), name
        assert np.array_equal(r.weights, f32(doc["weights"])), name
        assert r.output.dtype == np.float32
    # The same problem as one dict, and with the "return" diagnostics.
    p = problems()["rank-4 gqa causal bottom-right"]
    rc, doc, err = cli(dict(p, **{"return": ["lse", "entropy", "argmax"], "top_k": 2}))
    r = attn.compute(dict(p), returns=["lse", "entropy", "argmax"], top_k=2)
    for field in ("lse", "entropy", "argmax"):
        assert np.array_equal(getattr(r, field), f32(doc[field])), field
    assert np.array_equal(r.top_k_indices, f32(doc["top_k"]["indices"]))
    assert np.array_equal(r.top_k_weights, f32(doc["top_k"]["weights"]))


@test
def test_matches_the_float64_reference():
    for name, p in problems().items():
        want_out, want_w = ref.compute({k: (v.astype(np.float64) if isinstance(v, np.ndarray)
                                            else v) for k, v in p.items()})
        r = attn.compute(**p)
        assert np.allclose(r.output, want_out, rtol=1e-4, atol=1e-5), name
        assert np.allclose(r.weights, want_w, rtol=1e-4, atol=1e-6), name
        # precision f64: float64 out, float64 inputs read exactly.
        p64 = {k: (v.astype(np.float64) if isinstance(v, np.ndarray) else v)
               for k, v in p.items()}
        r64 = attn.compute(p64, precision="f64")
        assert r64.output.dtype == np.float64, name
        assert np.allclose(r64.output, want_out, rtol=1e-12, atol=1e-12), name


@test
def test_multihead_attention_state_dict():
    import torch
    torch.manual_seed(0)
    for kdim in (None, 12):
        mha = torch.nn.MultiheadAttention(16, 4, batch_first=True, kdim=kdim, vdim=kdim)
        x = torch.randn(2, 5, 16)
        kv = torch.randn(2, 7, kdim) if kdim else x
        with torch.no_grad():
            out, w = mha(x, kv, kv, need_weights=True, average_attn_weights=False)
        fields = dict(input=x) if kdim is None else dict(input=x, key=kv, value=kv)
        r = attn.compute(params=mha.state_dict(), num_heads=4, **fields)
        assert np.allclose(r.output, out.numpy(), rtol=1e-4, atol=1e-5), kdim
        assert np.allclose(r.weights, w.numpy(), rtol=1e-4, atol=1e-6), kdim
        # average_heads as nn.MultiheadAttention's default.
        with torch.no_grad():
            _, wa = mha(x, kv, kv, need_weights=True)
        ra = attn.compute(params=mha.state_dict(), num_heads=4, average_heads=True, **fields)
        assert np.allclose(ra.weights, wa.numpy(), rtol=1e-4, atol=1e-6), kdim


@test
def test_torch_noncontiguous_and_float64_inputs():
    import torch
    p = problems()["rank-4 gqa causal bottom-right"]
    want = attn.compute(**p)
    t = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in p.items()}
    t["query"].requires_grad_(True)  # detached on the way in
    got = attn.compute(**t)
    assert np.array_equal(got.output, want.output)
    # Non-contiguous views: a transposed copy transposed back, and a strided slice.
    q = np.ascontiguousarray(p["query"].transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    assert not q.flags.c_contiguous
    wide = np.zeros((2, 2, 7, 12), dtype=np.float32)
    wide[..., ::2] = p["value"]
    v = wide[..., ::2]
    assert not v.flags.c_contiguous
    got = attn.compute(query=q, key=p["key"], value=v, causal="bottom-right")
    assert np.array_equal(got.output, want.output)
    # float64 and float16 inputs: read as a .npy file of the same data (rounded to float32).
    q64 = p["query"].astype(np.float64) + 1e-12
    got = attn.compute(dict(p, query=q64))
    want64 = attn.compute(dict(p, query=q64.astype(np.float32)))
    assert np.array_equal(got.output, want64.output)
    # Nested lists, as in a JSON problem.
    got = attn.compute(dict(p, query=p["query"].tolist()))
    assert np.array_equal(got.output, want.output)


@test
def test_outputs_own_their_memory_without_a_copy():
    p = problems()["rank-4 gqa causal bottom-right"]
    r = attn.compute(**p)
    for a in (r.output, r.weights):
        assert not a.flags.owndata and type(a.base).__name__ == "PyCapsule"
        assert a.flags.c_contiguous and a.flags.writeable
    out = r.output
    del r
    gc.collect()
    assert np.isfinite(out).all()  # still alive after the result is gone


@test
def test_inputs_are_read_not_changed():
    p = problems()["rank-3 self heads mask"]
    before = {k: v.copy() for k, v in p.items() if isinstance(v, np.ndarray)}
    counts = {k: sys.getrefcount(p[k]) for k in before}
    attn.compute(**p)
    for k, v in before.items():
        assert np.array_equal(p[k], v), k
        assert sys.getrefcount(p[k]) == counts[k], k


@test
def test_gil_released_while_computing():
    # With a huge switch interval the main thread never hands the GIL over on its own: the
    # worker can only count while compute() has released it.
    counter = [0]
    stop = threading.Event()

    def worker():
        while not stop.is_set():
            counter[0] += 1
            time.sleep(0)  # releases the GIL: lets the main thread back in

    r = rng(2)
    q = r.standard_normal((1, 4, 256, 32), dtype=np.float32)
    old = sys.getswitchinterval()
    t = threading.Thread(target=worker)
    t.start()
    try:
        sys.setswitchinterval(1000.0)
        progressed = False
        for _ in range(20):
            c0 = counter[0]
            attn.compute(query=q, key=q, value=q, threads=1)
            c1 = counter[0]
            if c1 > c0:
                progressed = True
                break
    finally:
        sys.setswitchinterval(old)
        stop.set()
        t.join()
    assert progressed, "no Python thread ran while attn.compute was computing"
    # Two computations in two threads give what one gives.
    results = [None, None]

    def run(i):
        results[i] = attn.compute(query=q, key=q, value=q)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert np.array_equal(results[0].output, results[1].output)


@test
def test_errors_are_input_errors_with_the_cli_message():
    assert issubclass(attn.InputError, ValueError)
    p = problems()["rank-4 gqa causal bottom-right"]
    bad = [dict(p, key=p["key"][..., :5]),
           dict(p, num_heads=3),
           dict(p, causal="sideways"),
           dict(p, tokens=["a", 7]),
           dict(input=p["key"][0, 0], init={"seed": 1}, num_heads=3)]
    for b in bad:
        rc, _, err = cli(b)
        assert rc == 2, err
        try:
            attn.compute(**b)
        except attn.InputError as e:
            assert "attn: error: " + str(e) == err.strip().splitlines()[-1], (str(e), err)
        else:
            raise AssertionError("no InputError for %r" % err)
    expect_input_errors(((lambda: attn.compute(query=p["query"]), "key: missing"),
                         (lambda: attn.compute(querry=p["query"]), "unknown field 'querry'"),
                         (lambda: attn.compute(query=np.array(["a"]), key=1, value=1),
                          "query: unsupported dtype"),
                         (lambda: attn.compute(42), "problem: expected a dict"),
                         (lambda: attn.heatmap(np.ones((2, 2), np.float32), ["a", 7]),
                          "tokens: [1]: expected a string, got int"),
                         (lambda: attn.heatmap(np.ones((2, 2), np.float32), 7),
                          "tokens: expected a list of strings, got int")))
    # A problem file that is not a JSON object, or an array file: the CLI's reader and message.
    for name, text in (("list.json", b"[1, 2]"), ("q.npy", b"\x93NUMPY\x01\x00")):
        path = os.path.join(TMP, name)
        with open(path, "wb") as f:
            f.write(text)
        err = subprocess.run([ATTN, "compute", path], capture_output=True, text=True,
                             env=CLI_ENV).stderr
        try:
            attn.compute(path)
        except attn.InputError as e:
            assert "attn: error: " + str(e) == err.strip(), (str(e), err)
        else:
            raise AssertionError("no InputError for " + name)


@test
def test_warnings_go_through_the_warnings_module():
    r = rng(3)
    x = r.standard_normal((4, 8), dtype=np.float32)
    mask = np.ones((4, 4), dtype=bool)
    mask[2] = False
    rc, _, err = cli(dict(query=x, key=x, value=x, mask=mask))
    assert rc == 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = attn.compute(query=x, key=x, value=x, mask=mask)
    assert [str(w.message) for w in caught] == [
        line[len("attn: warning: "):] for line in err.splitlines()], (caught, err)
    assert res.rows_fully_masked == 1 and res.warnings


@test
def test_no_leak_over_10000_calls():
    import tracemalloc
    q = np.ones((1, 1, 2, 2), dtype=np.float32)
    before = sys.getrefcount(q)
    for _ in range(200):
        attn.compute(query=q, key=q, value=q)
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    objects = len(gc.get_objects())
    for _ in range(10000):
        r = attn.compute(query=q, key=q, value=q, returns=["lse"])
        assert r.output.shape == (1, 1, 2, 2)
    del r
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - start
    tracemalloc.stop()
    assert sys.getrefcount(q) == before
    assert len(gc.get_objects()) - objects < 50, len(gc.get_objects()) - objects
    assert grown < 64 * 1024, grown


def cli_heatmap(weights, out, *args):
    path = os.path.join(TMP, "weights.npy")
    np.save(path, weights)
    p = subprocess.run([ATTN, "heatmap", path, "-o", os.path.join(TMP, out), *args], env=CLI_ENV,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    with open(os.path.join(TMP, out), "rb") as f:
        return f.read()


@test
def test_heatmaps_are_the_clis():
    r = rng(4)
    w = r.random((2, 3, 3), dtype=np.float32)
    tokens = ["the", "cat", "sat"]
    for fmt in ("png", "svg", "html"):
        want = cli_heatmap(w, "map." + fmt, "--tokens", "the,cat,sat", "--title", "T",
                           "--cmap", "magma")
        fig = attn.heatmap(w, tokens, format=fmt, title="T", colormap="magma")
        assert fig.data == want, fmt
        assert fig.format == fmt
        shown = {"png": fig._repr_png_(), "svg": fig._repr_svg_(), "html": fig._repr_html_()}
        assert [k for k, v in shown.items() if v is not None] == [fmt], fmt
    path = os.path.join(TMP, "saved.png")
    attn.heatmap(w, tokens).save(path)
    with open(path, "rb") as f:
        assert f.read().startswith(b"\x89PNG")
    # One head, torch weights; a Result's weights and tokens.
    import torch
    want = cli_heatmap(w, "head.png", "--head", "1", "--title", "T")
    assert attn.heatmap(torch.from_numpy(w), head=1, title="T").data == want
    x = r.standard_normal((3, 8), dtype=np.float32)
    res = attn.compute(input=x, init={"seed": 1}, num_heads=2, tokens=tokens)
    assert res.tokens == tokens
    assert attn.heatmap(res, title="T").data == attn.heatmap(res.weights, tokens,
                                                             title="T").data
    view = attn.view(res)
    assert view.format == "html" and view._repr_html_().startswith("<iframe srcdoc=")
    expect_input_errors((
            (lambda: attn.heatmap(w, ["a", "b"]),
             "tokens: expected 3 tokens (one per query and key), got 2"),
            (lambda: attn.heatmap(w, format="jpg"),
             'format: expected "png", "svg" or "html", got "jpg"'),
            (lambda: attn.heatmap(w, head=5), "head 5: weights has 2 heads")), exact=True)


@test
def test_model_view_takes_hugging_faces_attentions():
    import torch
    r = rng(5)
    layers = tuple(torch.from_numpy(r.random((2, 3, 4, 4), dtype=np.float32))
                   for _ in range(2))
    tokens = ["[CLS]", "a", "b", "[SEP]"]
    stacked = np.stack([t.numpy() for t in layers])
    want = cli_heatmap(stacked, "model.html", "--batch", "0", "--tokens", ",".join(tokens),
                       "--title", "T")
    fig = attn.model_view(layers, tokens, title="T")
    assert fig.format == "html" and fig.data == want
    try:
        attn.model_view((layers[0], layers[1][:, :2]), tokens)
    except attn.InputError as e:
        assert str(e).startswith("attentions[1]: expected shape [2, 3, 4, 4], got [2, 2, 4, 4]"), e
    else:
        raise AssertionError("no InputError for layers of different shapes")


@test
def test_heatmap_axes_are_the_clis():
    # torch.stack(outputs.attentions) squeezed: [layers, H, L, L], by rank alone [B, H, L, L].
    w = rng(6).random((2, 3, 4, 4), dtype=np.float32)
    for axes, fmt in (("layers,heads", "html"), ("layers,heads", "svg"), ("batch,heads", "svg")):
        want = cli_heatmap(w, "axes." + fmt, "--axes", axes, "--title", "T")
        assert attn.heatmap(w, axes=axes, format=fmt, title="T").data == want, (axes, fmt)
    assert attn.heatmap(w, axes="layers,heads", format="svg").data != \
        attn.heatmap(w, format="svg").data
    expect_input_errors((
            (lambda: attn.heatmap(w, axes="heads,layers"),
             "axes heads,layers: \"layers\" repeated or out of order (expected layers, batch "
             "and heads in that order, joined by commas, e.g. layers,heads; none for [Lq, Lk])"),
            (lambda: attn.heatmap(w[0], axes="layers,heads"),
             "axes: weights has shape [3, 4, 4] (rank 3), the axes named give rank 4 (each "
             "named axis, then Lq, Lk)")), exact=True)


@test
def test_every_layer_from_hidden_states_equals_the_cli():
    r = rng(6)
    n, E, H = 2, 8, 2
    tensors = []
    for layer in range(n):
        for name, shape in (("w_q", (E, E)), ("w_k", (E, E)), ("w_v", (E, E)), ("w_o", (E, E)),
                            ("b_q", (E,)), ("b_k", (E,)), ("b_v", (E,)), ("b_o", (E,))):
            tensors.append((f"layers.{layer}.attn.{name}", "F32",
                            r.standard_normal(shape).astype(np.float32) * 0.3))
    ckpt = os.path.join(TMP, "m.safetensors")
    ref.write_safetensors(ckpt, sorted(tensors))
    hs = r.standard_normal((n + 1, 2, 4, E), dtype=np.float32)
    rc, doc, err = cli({"hidden_states": hs, "params": ckpt, "num_heads": H, "causal": True,
                        "tokens": ["a", "b", "c", "d"]})
    assert rc == 0, err
    got = attn.compute(hidden_states=hs, params=ckpt, num_heads=H, causal=True,
                       tokens=["a", "b", "c", "d"])
    assert got.layers == doc["layers"] == [0, 1]
    assert np.array_equal(got.output, f32(doc["output"]))
    assert np.array_equal(got.weights, f32(doc["weights"]))
    assert got.tokens == ["a", "b", "c", "d"]
    fig = attn.model_view(got, title="T")  # the stacked result: layers x heads
    assert fig.data == attn.model_view(tuple(got.weights), got.tokens, title="T").data


@test
def test_head_stats_and_rollout_equal_the_cli():
    sample = os.path.join(ROOT, "samples", "tiny-gpt2")
    args = ["compute", "--params", sample, "--text", "the cat sat on the cat", "--layers",
            "1,2", "--return", "head_stats,rollout", "--rollout-fusion", "max", "--no-weights"]
    p = subprocess.run([ATTN] + args, capture_output=True, cwd=TMP, env=CLI_ENV)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    got = attn.compute(params=sample, text="the cat sat on the cat", layers=[1, 2],
                       returns=["head_stats", "rollout"], rollout_fusion="max")
    assert list(got.head_stats) == list(doc["head_stats"])
    for name, a in got.head_stats.items():
        assert a.shape == (2, 4) and np.array_equal(a, f32(doc["head_stats"][name]),
                                                    equal_nan=True), name
    assert np.array_equal(got.rollout, f32(doc["rollout"]))


@test
def test_a_model_views_title_counts_as_the_clis():
    # One layer of one head: the CLI's compute --heatmap of every layer titles it
    # "model view: 1 layer × 1 head"; the module says the same (never "1 layers").
    r = rng(9)
    E = 4
    tensors = [(f"layers.0.attn.{name}", "F32", r.standard_normal(shape).astype(np.float32))
               for name, shape in (("w_q", (E, E)), ("w_k", (E, E)), ("w_v", (E, E)),
                                   ("w_o", (E, E)))]
    ckpt = os.path.join(TMP, "one_layer.safetensors")
    ref.write_safetensors(ckpt, sorted(tensors))
    hs = r.standard_normal((2, 3, E), dtype=np.float32)
    hs_path = os.path.join(TMP, "one_layer_hs.npy")
    np.save(hs_path, hs)
    svg = os.path.join(TMP, "one_layer.svg")
    p = subprocess.run([ATTN, "compute", "-", "--heatmap", svg], env=CLI_ENV,
                       input=json.dumps({"hidden_states": hs_path, "params": ckpt,
                                         "num_heads": 1}),
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    want = "model view: 1 layer \u00d7 1 head"
    with open(svg, encoding="utf-8") as f:
        assert want in f.read()
    got = attn.compute(hidden_states=hs, params=ckpt, num_heads=1)
    for fig in (attn.model_view(got, format="svg"), attn.heatmap(got.weights, format="svg",
                                                                layers=got.layers)):
        text = fig.data.decode("utf-8")
        assert want in text and "1 layers" not in text, text[:400]


@test
def test_float32_c_contiguous_inputs_are_not_copied():
    # Key and value of 128 MB each and one query row: a copy of them on the way in would
    # add 256 MB to the peak RSS; read in place, the call adds next to nothing. In a fresh
    # process, so that the peak is this call's.
    script = """if True:
        import resource, sys, numpy as np, attn
        def peak():
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        L, D = 1 << 19, 64
        q = np.full((1, 1, 1, D), 0.5, np.float32)
        k = np.ones((1, 1, L, D), np.float32)
        v = np.ones((1, 1, L, D), np.float32)
        v[0, 0, L - 1] = 3.0
        torch_v = None
        if sys.argv[1] == "torch":
            import torch
            k, v = torch.from_numpy(k), torch.from_numpy(v)
        base = peak()
        r = attn.compute(query=q, key=k, value=v, no_weights=True, threads=1)
        grown = peak() - base
        want = (L - 1 + 3.0) / L
        assert abs(float(r.output[0, 0, 0, 0]) - want) < 1e-5, r.output[0, 0, 0, 0]
        print(grown)
    """
    for kind in ("numpy", "torch"):
        p = subprocess.run([sys.executable, "-c", script, kind], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        grown = int(p.stdout)
        assert grown < 64 << 20, "%s: peak RSS grew by %d MB" % (kind, grown >> 20)


@test
def test_hidden_states_handed_over_and_refused_in_one_layer():
    r = rng(9)
    hs = r.standard_normal((2, 3, 4), dtype=np.float32)
    try:
        attn.compute(query=hs[0], key=hs[0], value=hs[0], token_ids=None, layers=None,
                     hidden_states=None, bias=None)
    except attn.InputError as e:
        raise AssertionError("None fields are absent: " + str(e))
    expect_input_errors(((lambda: attn.compute(hidden_states=hs), "hidden_states: needs"),
                         (lambda: attn.compute(hidden_states=hs, query=hs[0], key=hs[0],
                                               value=hs[0]), "hidden_states: gives every")))


# ----------------------------------------------------------------------------- models

def tiny_model(arch, vocab=None):
    """A tiny random Hugging Face folder written by tests/cli/forward_oracle.py's writer, with
    its float64 oracle (weights [layers, H, L, L], hidden states); `vocab`: also a
    WordPiece tokenizer.json (tests/cli/tokenizer_documents.py's) and that many embeddings."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
    # harness (which those modules import) reads sys.argv: as `--list` it runs nothing.
    argv = sys.argv
    sys.argv = [argv[0], "--list"]
    try:
        import forward_oracle as fo
        import tokenizer_documents as tk
    finally:
        sys.argv = argv
    doc = tk.wordpiece_document(True) if vocab else None
    if doc:
        fo.V = max(fo.V, len(doc["model"]["vocab"]))
    folder, ws, hs, _, _ = fo.build(arch)
    if doc:
        with open(os.path.join(folder, "tokenizer.json"), "w") as f:
            json.dump(doc, f)
    return folder, ws, hs, fo.IDS


def cli_json(*args):
    p = subprocess.run([ATTN, *args], capture_output=True, text=True, env=CLI_ENV)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@test
def test_run_model_equals_the_cli_and_the_float64_forward():
    folder, ws, hs, ids = tiny_model("llama")
    ids_path = os.path.join(TMP, "ids.json")
    with open(ids_path, "w") as f:
        json.dump(ids, f)
    doc = cli_json("compute", "--params", folder, "--token-ids", ids_path, "--return",
                   "hidden_states", "--layers", "1")
    r = attn.run_model(folder, token_ids=ids, layers=[1], returns=["hidden_states"])
    assert r.layers == doc["layers"] == [1]
    assert np.array_equal(r.weights, f32(doc["weights"]))
    assert np.array_equal(r.output, f32(doc["output"]))
    assert np.array_equal(r.hidden_states, f32(doc["hidden_states"]))
    assert np.allclose(r.weights, ws[1:], rtol=2e-4, atol=2e-5)
    assert np.allclose(r.hidden_states, hs, rtol=2e-4, atol=2e-5)
    assert list(r.token_ids) == ids
    # Every layer by default; f64 to the oracle's precision; a pathlib.Path works.
    import pathlib
    r64 = attn.run_model(pathlib.Path(folder), token_ids=np.array(ids), precision="f64")
    assert r64.weights.dtype == np.float64 and np.allclose(r64.weights, ws, rtol=0, atol=1e-10)
    expect_input_errors(((lambda: attn.run_model(folder), "give text=... or token_ids"),
                         (lambda: attn.run_model(os.path.join(TMP, "nothing"), token_ids=ids),
                          "not a model"),
                         (lambda: attn.run_model(folder, token_ids=ids, layers=[9]), "layers")))


@test
def test_run_model_select_heads_and_query_rows_are_numpys_slice():
    folder, _, _, ids = tiny_model("llama")
    full = attn.run_model(folder, token_ids=ids, returns=["lse", "head_stats"])
    for heads, rows, kept in (([2, 0], [1, -2], slice(1, len(ids) - 2)),
                              ("1-3", "-3:", slice(-3, None)),
                              ([3], (None, 4), slice(None, 4))):
        r = attn.run_model(folder, token_ids=ids, returns=["lse", "head_stats"],
                           select_heads=heads, query_rows=rows)
        h = sorted(heads) if isinstance(heads, list) else [1, 2, 3]
        assert np.array_equal(r.weights, full.weights[:, h][:, :, kept]), (heads, rows)
        assert np.array_equal(r.lse, full.lse[:, h][:, :, kept]), (heads, rows)
        assert np.array_equal(r.output, full.output)
        for name, a in full.head_stats.items():
            assert np.array_equal(r.head_stats[name], a[:, h], equal_nan=True), name
    r = attn.compute(input=rng(3).standard_normal((5, 8)).astype(np.float32), select_heads=[0],
                     query_rows=[-2, None])
    assert r.weights.shape == (1, 2, 5), r.weights.shape
    expect_input_errors(((lambda: attn.run_model(folder, token_ids=ids, select_heads=[4]),
                          "select_heads: head 4 does not exist"),
                         (lambda: attn.run_model(folder, token_ids=ids, query_rows="3:3"),
                          "query_rows: 3:3 keeps no row")))


@test
def test_tokenize_and_text_equal_the_cli():
    folder, _, _, _ = tiny_model("bert", vocab=True)
    texts = ["Hello world, the cat sat on the mat", "playing code"]
    for special in (True, False):
        args = ["tokenize", folder] + [a for t in texts for a in ("--text", t)]
        doc = cli_json(*(args + ([] if special else ["--no-special-tokens"])))
        got = attn.tokenize(folder, texts, special_tokens=special)
        assert [g["tokens"] for g in got] == [d["tokens"] for d in doc], (got, doc)
        assert [g["token_ids"].tolist() for g in got] == [d["token_ids"] for d in doc]
        assert got[0]["token_ids"].dtype == np.int64
        one = attn.tokenize(folder, texts[0], special_tokens=special)
        assert one["tokens"] == doc[0]["tokens"]
    p = subprocess.run([ATTN, "compute", "--params", folder, "--text", texts[0], "--layers", "0"],
                       capture_output=True, text=True, env=CLI_ENV)
    if p.returncode != 0:  # the library's forward pass does not take text yet: the same error
        try:
            attn.run_model(folder, text=texts[0], layers=[0])
        except attn.InputError as e:
            assert "attn: error: " + str(e) == p.stderr.strip().splitlines()[-1], (e, p.stderr)
        else:
            raise AssertionError("the CLI refuses text, run_model does not: " + p.stderr)
        return
    doc = json.loads(p.stdout)
    r = attn.run_model(folder, text=texts[0], layers=[0])
    assert np.array_equal(r.weights, f32(doc["weights"]))
    assert r.tokens == doc["tokens"] == attn.tokenize(folder, texts[0])["tokens"]
    assert r.query_tokens == doc.get("query_tokens", r.query_tokens)
    by_ids = attn.run_model(folder, token_ids=attn.tokenize(folder, texts[0])["token_ids"],
                            layers=[0])
    assert np.array_equal(r.weights, by_ids.weights)


@test
def test_census_equals_the_cli():
    folder, _, _, _ = tiny_model("opt")
    texts = [[3, 17, 5, 3, 17, 5, 9], [8, 8, 4, 8, 4, 1, 1], [2, 9, 11, 2, 9, 11, 2]]
    corpus = os.path.join(TMP, "census.jsonl")
    with open(corpus, "w") as f:
        f.write("".join(json.dumps({"token_ids": t}) + "\n" for t in texts))
    npz = os.path.join(TMP, "census_cli.npz")
    p = subprocess.run([ATTN, "census", folder, corpus, "--probe", "induction:4:2", "--output",
                        npz], capture_output=True, text=True, env=CLI_ENV)
    assert p.returncode == 0, p.stderr
    want = np.load(npz)
    seen = []
    c = attn.census(folder, texts, probe="induction:4:2", jobs=2, progress=lambda d, t:
                    seen.append((d, t)))
    assert (c.layers, c.heads, c.texts) == want["entropy"].shape + (4,), repr(c)
    assert seen and seen[-1] == (4, 4), seen
    for name in c.stats:
        assert np.array_equal(c.means[name], want[name], equal_nan=True), name
        assert np.array_equal(c[name], want[name], equal_nan=True), name
        assert np.array_equal(c.sums[name], want[name + "_sum"]), name
        assert np.array_equal(c.rows[name], want[name + "_rows"]), name
    assert np.array_equal(c.sink, want["sink"].astype(bool))
    # The same from the TEXTS file; saved as the CLI writes it; the page; the table.
    c2 = attn.census(folder, corpus, probe="induction:4:2")
    assert np.array_equal(c2["induction"], c["induction"], equal_nan=True)
    c.save(os.path.join(TMP, "census_py.npz"))
    got = np.load(os.path.join(TMP, "census_py.npz"))
    assert sorted(got.files) == sorted(want.files)
    assert all(np.array_equal(got[m], want[m], equal_nan=True) for m in want.files)
    page = os.path.join(TMP, "census.html")
    attn.census(folder, texts[:1], html=page)
    assert open(page, encoding="utf-8").read(15) == "<!DOCTYPE html>"
    assert c._repr_html_().count("<tr>") == c.layers * c.heads + 1
    expect_input_errors(((lambda: attn.census(folder), "give texts"),
                         (lambda: attn.census(folder, [[1, 999]]), "texts: line 1: "),
                         (lambda: attn.census(folder, ["a", [1.5]]), "texts[1]: expected token ids"),
                         (lambda: attn.census(folder, texts, probe="induction:3"), "probe"),
                         (lambda: c.save(os.path.join(TMP, "c.txt")), "json, .csv or .npz")))


@test
def test_census_stops_on_ctrl_c():
    import signal
    import threading
    folder, _, _, _ = tiny_model("opt")
    texts = [[3, 17, 5, 3, 17, 5, 9]] * 100000  # minutes of work
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    t0 = time.time()
    timer.start()
    try:
        attn.census(folder, texts, jobs=2)  # no Python callback: the census checks itself
        raise AssertionError("not interrupted")
    except KeyboardInterrupt:
        pass
    finally:
        timer.cancel()
    assert time.time() - t0 < 20, time.time() - t0


@test
def test_compare_equals_the_cli():
    folder, _, _, ids = tiny_model("llama")
    ids_path = os.path.join(TMP, "ids.json")
    with open(ids_path, "w") as f:
        json.dump(ids, f)
    names = ("js", "tv", "max_abs", "top1", "topk")
    # The model against itself: 0 and 1 exactly; the CLI's numbers, [layers, H].
    doc = cli_json("compare", folder, folder, "--token-ids", ids_path, "--quiet")
    got = attn.compare(folder, folder, token_ids=ids, top_k=3)
    for n in names:
        assert got[n].dtype == np.float64 and np.array_equal(got[n], np.array(doc[n], float)), n
    assert (got["js"] == 0).all() and (got["topk"] == 1).all() and got["top_k"] == 3
    assert got["rows"] == len(ids)
    # Weights: array-likes (leading axes the grid) and paths alike, as the CLI reads them.
    a, b = rng(5).dirichlet(np.ones(6), (2, 3, 4)), rng(6).dirichlet(np.ones(6), (2, 3, 4))
    a, b = a.astype(np.float32), b.astype(np.float32)
    pa, pb = os.path.join(TMP, "cmp-a.npy"), os.path.join(TMP, "cmp-b.npy")
    np.save(pa, a)
    np.save(pb, b)
    doc = cli_json("compare", pa, pb, "--top-k", "2", "--quiet")
    for d in (attn.compare(a, b, top_k=2), attn.compare(pa, pb, top_k=2)):
        for n in names:
            assert d[n].shape == (2, 3) and np.array_equal(d[n], np.array(doc[n], float)), n
    expect_input_errors(((lambda: attn.compare(a, b[:1]), "shape"),
                         (lambda: attn.compare(a, b, top_k=0), "top_k"),
                         (lambda: attn.compare(folder, folder, text="x", token_ids=ids),
                          "one of them")))


def deep_gpt2(folder, layers=400, embd=32, heads=2, positions=2048, vocab=16):
    """A GPT-2 of many small layers: a model run long in layers, each layer short."""
    import reference_files as rf
    g = np.random.default_rng(3)
    t = []

    def p(name, *shape, base=0.0):
        t.append((name, "F32", (base + g.standard_normal(shape) * 0.02).astype(np.float32)))
    p("transformer.wte.weight", vocab, embd)
    p("transformer.wpe.weight", positions, embd)
    for i in range(layers):
        pre = "transformer.h.%d." % i
        for n, shape in (("ln_1.weight", (embd,)), ("ln_1.bias", (embd,)),
                         ("attn.c_attn.weight", (embd, 3 * embd)), ("attn.c_attn.bias", (3 * embd,)),
                         ("attn.c_proj.weight", (embd, embd)), ("attn.c_proj.bias", (embd,)),
                         ("ln_2.weight", (embd,)), ("ln_2.bias", (embd,)),
                         ("mlp.c_fc.weight", (embd, 4 * embd)), ("mlp.c_fc.bias", (4 * embd,)),
                         ("mlp.c_proj.weight", (4 * embd, embd)), ("mlp.c_proj.bias", (embd,))):
            p(pre + n, *shape, base=1.0 if n.endswith("weight") and "ln" in n else 0.0)
    p("transformer.ln_f.weight", embd, base=1.0)
    p("transformer.ln_f.bias", embd)
    os.makedirs(folder, exist_ok=True)
    rf.write_safetensors(os.path.join(folder, "model.safetensors"), t)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"model_type": "gpt2", "n_embd": embd, "n_head": heads, "n_layer": layers,
                   "n_positions": positions, "vocab_size": vocab, "layer_norm_epsilon": 1e-5,
                   "activation_function": "gelu_new"}, f)


@test
def test_run_model_progress_and_ctrl_c():
    import signal
    folder = os.path.join(TMP, "deep-gpt2")
    deep_gpt2(folder)
    ids = list(np.random.default_rng(0).integers(0, 16, 2048))
    seen = []
    attn.run_model(folder, token_ids=ids, layers=[4], no_weights=True,
                   progress=lambda d, t: seen.append((d, t)))
    assert seen == [(d, 5) for d in range(1, 6)], seen
    t0 = time.time()
    attn.run_model(folder, token_ids=ids, layers=[4], no_weights=True)
    layer = (time.time() - t0) / 5  # one layer's time; the whole model runs 400
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    t0 = time.time()
    timer.start()
    try:
        attn.run_model(folder, token_ids=ids, no_weights=True)  # no Python callback
        raise AssertionError("not interrupted")
    except KeyboardInterrupt:
        pass
    finally:
        timer.cancel()
    waited = time.time() - t0 - 0.3
    # Stopped after the layer being run (a few layers' time), not after all 400.
    assert waited < 1.0 + 10 * layer, (waited, layer)
    assert 400 * layer > 2 * (1.0 + 10 * layer), ("the model runs too fast to tell", layer)


def interrupted_after(delay, call, cpu=None):
    """Seconds from a SIGINT sent `delay` s into call() to its KeyboardInterrupt. With
    `cpu` (a list), also appends the process's CPU seconds from the signal to the interrupt
    (every thread's): the work done after the signal, which a loaded machine's wait for a
    core does not inflate (a wall-time bound failed at 4.4 and 11.9 s at load average 3-8)."""
    import signal
    at = []
    timer = threading.Timer(delay, lambda: (at.append(time.process_time()),
                                            os.kill(os.getpid(), signal.SIGINT)))
    t0 = time.time()
    timer.start()
    try:
        call()
        raise AssertionError("not interrupted")
    except KeyboardInterrupt:
        if cpu is not None:
            cpu.append(time.process_time() - at[0])
        return time.time() - t0 - delay
    finally:
        timer.cancel()


@test
def test_ctrl_c_inside_a_layer_and_one_problem():
    # Each call below is one long step: a single layer of L = 32768 (one head of 64: about
    # 0.14 TFLOP causal, seconds in the sanitized build), one problem of 1 head x 32768^2 x
    # D = 64 (0.27 TFLOP; its inputs 8 MiB each). Stopping between layers could not
    # answer within 1 s; the kernels' key blocks and the chunks of the norms, activations
    # and sums can. The runs are never finished, so this costs about 1 s a call.
    folder = os.path.join(TMP, "long-gpt2")
    deep_gpt2(folder, layers=1, embd=64, heads=1, positions=32768)
    ids = list(np.random.default_rng(1).integers(0, 16, 32768))
    # Within 1 s of work a thread after the signal: CPU time, so that a loaded machine's
    # wait for a core is not counted (on an idle one the wall time is as short).
    cpu = []
    waited = interrupted_after(
        0.5, lambda: attn.run_model(folder, token_ids=ids, no_weights=True, threads=2), cpu)
    assert cpu[-1] < 2 * 1.0, (waited, cpu)
    g = rng(8)
    q, k, v = (g.standard_normal((1, 32768, 64), dtype=np.float32) for _ in range(3))
    waited = interrupted_after(
        0.5, lambda: attn.compute(query=q, key=k, value=v, no_weights=True, threads=1), cpu)
    assert cpu[-1] < 1.0, (waited, cpu)
    # The interrupted census writes no page (nor a temporary file beside it), and stops long
    # before its 50 texts are done: within 1 s + one text's time, measured here uninterrupted
    # (under ASan on a loaded 2-vCPU machine one text took up to a second, and a flat 1 s
    # bound failed at 1.59 s).
    t0 = time.time()
    attn.census(folder, [ids[:4096]])
    one = time.time() - t0
    out = os.path.join(TMP, "interrupted")
    os.makedirs(out)
    waited = interrupted_after(0.3, lambda: attn.census(folder, [ids[:4096]] * 50, html=os.path.join(
        out, "census.html")))
    assert waited < 1.0 + one and os.listdir(out) == [], (waited, one, os.listdir(out))


@test
def test_progress_true_and_weights_dtype():
    import contextlib
    import io
    # 40 layers: enough to see one line per layer; the 400 of the Ctrl-C tests cost 10 s
    # under the sanitizers, for nothing more to see.
    folder = os.path.join(TMP, "deep-gpt2-40")
    deep_gpt2(folder, layers=40)
    ids = list(np.random.default_rng(1).integers(0, 16, 24))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        r16 = attn.run_model(folder, token_ids=ids, layers=[0, 39], progress=True,
                             weights_dtype="f16")
    lines = err.getvalue().split("\r")
    # tqdm is not a dependency: without it, one line rewritten per layer, ended at 40/40.
    assert lines[1].startswith("attn: [") and " 1/40 layers" in lines[1], lines[:3]
    assert lines[-1].startswith("attn: [" + "#" * 30 + "] 40/40 layers"), lines[-1]
    assert lines[-1].endswith("\n") and len(lines) == 41, (len(lines), lines[-1])
    r32 = attn.run_model(folder, token_ids=ids, layers=[0, 39])
    assert r16.weights.dtype == np.float16 and r32.weights.dtype == np.float32
    assert np.array_equal(r16.weights.view(np.uint16),
                          r32.weights.astype(np.float16).view(np.uint16))
    assert np.array_equal(r16.output, r32.output)  # only the weights change type
    for bad, word in ((5, "progress"), ("f16", "progress")):
        try:
            attn.run_model(folder, token_ids=ids, layers=[0], progress=bad)
            raise AssertionError("accepted progress=%r" % (bad,))
        except attn.InputError as e:
            assert word in str(e), e
    try:
        attn.run_model(folder, token_ids=ids, layers=[0], weights_dtype="bf16")
        raise AssertionError("accepted weights_dtype='bf16'")
    except attn.InputError as e:
        assert 'weights_dtype: expected "f32" or "f16"' in str(e), e


@test
def test_activations_keyword():
    # activations="q8_0" reaches the library as the CLI's --activations (the field pass-through):
    # a quantized GGUF's layer 1 (its scores reached by rounded Q8_0/Q4_0 products) changes
    # by the rounding only (gguf_quant_forward_test states the bound), and a bad value is the
    # CLI's error.
    gguf = os.path.join(ROOT, "tests", "unit", "fixtures", "gguf", "quant_models", "llama.gguf")
    ids = [1, 6, 3, 7, 4, 5, 2, 6]
    f32 = attn.run_model(gguf, token_ids=ids, layers=[1])
    q8 = attn.run_model(gguf, token_ids=ids, layers=[1], activations="q8_0")
    diff = float(np.max(np.abs(q8.weights - f32.weights)))
    assert 0 < diff < 0.05, diff
    # activations="q8": layer 0's scores are reached by Q4_K (q) and Q6_K (k) matrices only,
    # which q8_0 leaves alone and q8 rounds to Q8_K.
    f32_0 = attn.run_model(gguf, token_ids=ids, layers=[0])
    q8_0 = attn.run_model(gguf, token_ids=ids, layers=[0], activations="q8_0")
    k8 = attn.run_model(gguf, token_ids=ids, layers=[0], activations="q8")
    assert np.array_equal(q8_0.weights, f32_0.weights)
    diff = float(np.max(np.abs(k8.weights - f32_0.weights)))
    assert 0 < diff < 0.05, diff
    # activations="bf16": the file's one BF16 matrix (layer 1's o_proj) multiplies its inputs
    # rounded to BF16 (each moves by at most 2^-8 of itself): no score is reached by it, so
    # the weights keep their bits, and the hidden states after it move by about that much.
    h32 = attn.run_model(gguf, token_ids=ids, returns=["hidden_states"])
    hb = attn.run_model(gguf, token_ids=ids, returns=["hidden_states"], activations="bf16")
    assert np.array_equal(hb.weights, h32.weights)
    rel = float(np.sqrt(np.mean((hb.hidden_states - h32.hidden_states) ** 2) /
                        np.mean(h32.hidden_states ** 2)))
    assert 0 < rel < 2.0 ** -8, rel
    try:
        attn.run_model(gguf, token_ids=ids, layers=[1], activations="q4_0")
        raise AssertionError("accepted activations='q4_0'")
    except attn.InputError as e:
        assert "activations" in str(e), e


@test
def test_help_shows_the_parameters():
    doc = attn.compute.__doc__
    for word in ("threads", "no_weights", "query", "returns", "InputError"):
        assert word in doc, word
    for f, words in ((attn.run_model, ("path", "text", "token_ids", "layers", "hidden_states")),
                     (attn.tokenize, ("path", "text", "special_tokens"))):
        for word in words:
            assert word in f.__doc__, (f.__name__, word)


def main():
    failed = 0
    for f in TESTS:
        try:
            f()
            print("ok  ", f.__name__)
        except Exception:
            failed += 1
            print("FAIL", f.__name__)
            traceback.print_exc()
    print(f"{len(TESTS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
