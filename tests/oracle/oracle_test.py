#!/usr/bin/python3
"""The numpy float64 oracle for `attn compute`.

    /usr/bin/python3 tests/oracle/oracle_test.py PATH/TO/attn

Generates (fixed seed) a few hundred problems covering the contract in
/work/shared/interface.md (every preset, ranks 2-4, masks of every shape, causal
alignments, fully masked rows, heads and grouped-query heads, params inline / from a
file / nn.MultiheadAttention names, init, .npy and .json array files, stdin, flags,
--output/--weights/--no-weights), runs the binary on each, and compares with
reference.py under a float32-derived tolerance. Prints one line per failure and ends
with "N passed, M failed"; exits 1 if any failed. The problem data, the table of cases and
running one case live in oracle_harness.py; the generators of the cases here.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle_harness import (ERRORS, RNG, SIZES, Arr, ErrorCase, ParamsFile, add, f32,  # noqa: E402
                            main, mask_shape, pick, qkv, rbias, rmask, rn)


def gen_basic():
    """Direct Q/K/V, no masks: every size, Lq != Lk, own value dim, presets, scales."""
    pairs = [(1, 1), (1, 2), (2, 1), (3, 3), (31, 32), (32, 31), (33, 33), (63, 64),
             (64, 65), (65, 63), (113, 113), (1, 113), (113, 1), (2, 65), (64, 3),
             (32, 32), (33, 113), (113, 31), (63, 63), (65, 65)]
    variants = [None, "dot", "scaled", None]
    for n, (Lq, Lk) in enumerate(pairs):
        rank = 2 + n % 2
        B = int(RNG.integers(1, 4)) if rank == 3 else 1
        D = pick([1, 2, 3, 8, 16, 31, 33])
        Dv = pick([1, 3, 5, 8, D])
        q, k, v = qkv(rank, B, 1, 1, Lq, Lk, D, Dv)
        prob = {"query": Arr(q), "key": Arr(k), "value": Arr(v)}
        var = variants[n % 4]
        if var:
            prob["variant"] = var
        if n % 5 == 1:
            prob["scale"] = pick([1, 0.37, 2.5, 0.125])
        if n % 7 == 3:
            prob["scale"] = None  # explicit null = default
        add("basic[%d] r%d Lq=%d Lk=%d D=%d Dv=%d %s" % (n, rank, Lq, Lk, D, Dv, var), prob)
    # Large scores: max-subtraction in softmax matters (exp overflows float32 otherwise).
    for n in range(2):
        q, k, v = qkv(3, 2, 1, 1, 17, 33, 16, 4, s=6.0)
        add("basic large-scores[%d]" % n, {"query": Arr(q), "key": Arr(k), "value": Arr(v),
                                          "variant": "dot"})
    # Seed 003's worked example.
    add("seed003 worked example", {
        "query": [[1, 0, 1], [0, 1, 1]], "key": [[1, 0, 1], [1, 1, 0], [0, 1, 1]],
        "value": [[10, 0], [0, 10], [5, 5]], "variant": "dot"})
    # `input` alone: self-attention with no projections; input + context: cross, none.
    x = rn(2, 9, 6)
    add("input only (Q=K=V=X)", {"input": Arr(x)})
    add("input + context, no projections", {"input": Arr(rn(7, 6)), "context": Arr(rn(11, 6))})


def gen_rank4():
    """Rank-4 [B, H, L, D] inputs used directly, with and without num_heads, GQA."""
    configs = [(1, 1, 1), (2, 2, 2), (2, 4, 4), (1, 4, 2), (3, 4, 1), (2, 2, 1),
               (1, 2, 2), (2, 4, 2), (1, 1, 1), (2, 1, 1), (1, 4, 4), (2, 4, 1),
               (1, 2, 1), (3, 2, 2)]
    for n, (B, H, Hkv) in enumerate(configs):
        Lq, Lk = pick(SIZES), pick(SIZES)
        D, Dv = pick([1, 4, 8, 16]), pick([2, 4, 7])
        q, k, v = qkv(4, B, H, Hkv, Lq, Lk, D, Dv)
        prob = {"query": Arr(q), "key": Arr(k), "value": Arr(v)}
        if n % 2:
            prob["num_heads"] = H
            prob["num_kv_heads"] = Hkv
        if n % 3 == 1:
            prob["scale"] = pick([1, 0.3])
        if n % 4 == 2:
            prob["causal"] = pick([True, "bottom-right"])
        if n % 5 == 3:
            kind = pick(["4BH", "41H", "4B1", "2"])
            prob["mask"] = Arr(rmask(mask_shape(kind, B, H, Lq, Lk), 0.8))
        add("rank4[%d] B=%d H=%d Hkv=%d Lq=%d Lk=%d D=%d Dv=%d" % (n, B, H, Hkv, Lq, Lk, D, Dv),
            prob)


def gen_split_heads():
    """Rank 2/3 direct inputs split along features into heads (and GQA), no params."""
    configs = [(2, 2, 2), (2, 4, 4), (3, 2, 1), (3, 4, 2), (2, 4, 1), (3, 4, 4),
               (2, 2, 1), (3, 2, 2), (3, 4, 1), (2, 4, 2)]
    for n, (rank, H, Hkv) in enumerate(configs):
        B = 2 if rank == 3 else 1
        Lq, Lk = pick(SIZES), pick(SIZES)
        D, Dv = pick([1, 2, 4, 8]), pick([1, 3, 4])
        q, k, v = qkv(rank, B, H, Hkv, Lq, Lk, D, Dv)
        prob = {"query": Arr(q), "key": Arr(k), "value": Arr(v), "num_heads": H}
        if Hkv != H or n % 3 == 0:
            prob["num_kv_heads"] = Hkv
        if n % 4 == 1:
            prob["scale"] = 1
        add("split-heads[%d] r%d H=%d Hkv=%d Lq=%d Lk=%d D=%d Dv=%d"
            % (n, rank, H, Hkv, Lq, Lk, D, Dv), prob)


def masked_base(rank, B, H, Hkv, Lq, Lk, D=4, Dv=3):
    q, k, v = qkv(rank, B, H, Hkv, Lq, Lk, D, Dv)
    prob = {"query": Arr(q), "key": Arr(k), "value": Arr(v)}
    if H > 1 and rank != 4:
        prob["num_heads"] = H
        if Hkv != H:
            prob["num_kv_heads"] = Hkv
    return prob


def gen_masks():
    # Every mask shape, for rank 3 and rank 4 inputs with several heads.
    kinds = ["2", "3B", "31", "4BH", "41H", "4B1", "411"]
    stores = [("inline", None), ("inline", "int"), ("npy-bool", None), ("npy-u8", None),
              ("npy32", None), ("inline", "float"), ("json", None)]
    n = 0
    for kind in kinds:
        for rank in (3, 4):
            B, H = (2, 2) if n % 2 == 0 else (3, 4)   # B == H: numpy broadcasting would
            Hkv = H if n % 3 else 1                    # silently mis-apply [B, Lq, Lk]
            Lq, Lk = pick(SIZES), pick(SIZES)
            prob = masked_base(rank, B, H, Hkv, Lq, Lk)
            store, inline_as = stores[n % len(stores)]
            prob["mask"] = Arr(rmask(mask_shape(kind, B, H, Lq, Lk)), store, inline_as)
            add("mask[%s] r%d B=%d H=%d Hkv=%d Lq=%d Lk=%d %s" % (kind, rank, B, H, Hkv, Lq, Lk,
                                                                  store), prob)
            n += 1
    # Nonzero (not just 1) means keep.
    prob = masked_base(3, 2, 1, 1, 5, 6)
    m = rmask((5, 6)).astype(np.float64) * f32(RNG.uniform(0.5, 3.0, (5, 6)))
    prob["mask"] = Arr(m, "inline", "float")
    add("mask nonzero floats keep", prob)
    # Rank-2 inputs with masks (no batch dim).
    prob = masked_base(2, 1, 2, 2, 7, 9)
    prob["mask"] = Arr(rmask((7, 9)))
    add("mask[2] rank-2 inputs, 2 heads", prob)
    prob = masked_base(2, 1, 2, 1, 7, 9)
    prob["mask"] = Arr(rmask((1, 2, 7, 9)))
    add("mask[1,H,Lq,Lk] rank-2 inputs, GQA", prob)

    # Additive bias, every shape, with -inf entries.
    bstores = ["inline", "npy32", "npy64", "json", "inline", "npy32", "inline"]
    for i, kind in enumerate(kinds):
        rank = 3 + i % 2
        B, H = (2, 2) if i % 2 == 0 else (2, 4)
        Lq, Lk = pick(SIZES), pick(SIZES)
        prob = masked_base(rank, B, H, H, Lq, Lk)
        prob["bias"] = Arr(rbias(mask_shape(kind, B, H, Lq, Lk), p_inf=0.25), bstores[i])
        add("bias[%s] r%d B=%d H=%d Lq=%d Lk=%d %s" % (kind, rank, B, H, Lq, Lk, bstores[i]),
            prob)
    prob = masked_base(3, 2, 1, 1, 6, 8)
    prob["bias"] = Arr(rn(6, 8, s=3.0))
    add("bias finite only", prob)

    # key_padding_mask: [B, Lk], [Lk], [1, Lk], stores.
    for i, (rank, shape_kind, store) in enumerate(
            [(3, "BLk", "inline"), (3, "Lk", "inline"), (3, "1Lk", "npy-bool"),
             (4, "BLk", "npy-u8"), (4, "Lk", "inline"), (2, "Lk", "json"),
             (3, "BLk", "npy32"), (2, "1Lk", "inline")]):
        B = 1 if rank == 2 else 3
        H = pick([1, 2, 4])
        Lq, Lk = pick(SIZES), pick(SIZES)
        prob = masked_base(rank, B, H, H, Lq, Lk)
        shape = {"BLk": (B, Lk), "Lk": (Lk,), "1Lk": (1, Lk)}[shape_kind]
        inline_as = "int" if i % 2 else None
        prob["key_padding_mask"] = Arr(rmask(shape, 0.75), store, inline_as)
        add("kpm[%s] r%d B=%d H=%d Lq=%d Lk=%d %s" % (shape_kind, rank, B, H, Lq, Lk, store),
            prob)

    # Causal, both alignments, Lq > Lk, Lq < Lk, Lq == Lk.
    shapes = [(5, 5), (9, 4), (4, 9), (1, 7), (7, 1), (33, 65), (65, 33), (64, 64), (113, 2),
              (2, 113), (31, 32), (32, 31)]
    for i, (Lq, Lk) in enumerate(shapes):
        for causal in (True if i % 2 else "top-left", "bottom-right"):
            rank = pick([2, 3, 4])
            H = pick([1, 2])
            prob = masked_base(rank, 2 if rank > 2 else 1, H, H, Lq, Lk)
            prob["causal"] = causal
            add("causal=%s r%d Lq=%d Lk=%d H=%d" % (causal, rank, Lq, Lk, H), prob)
    prob = masked_base(3, 2, 1, 1, 6, 6)
    prob["causal"] = False
    add("causal=false explicit", prob)

    # Combinations.
    for i in range(10):
        rank = pick([2, 3, 4])
        B = 1 if rank == 2 else int(RNG.integers(1, 4))
        H = pick([1, 2, 4])
        Hkv = pick([d for d in (1, 2, 4) if H % d == 0])
        Lq, Lk = pick(SIZES), pick(SIZES)
        prob = masked_base(rank, B, H, Hkv, Lq, Lk)
        mkinds = ["2", "31", "411", "41H"] + (["3B", "4BH", "4B1"] if rank != 2 else [])
        if i % 3 != 2:
            prob["mask"] = Arr(rmask(mask_shape(pick(mkinds), B, H, Lq, Lk), 0.8))
        if i % 3 != 1:
            prob["bias"] = Arr(rbias(mask_shape(pick(mkinds), B, H, Lq, Lk), 0.1))
        if rank == 2:
            prob["key_padding_mask"] = Arr(rmask((Lk,), 0.85))
        else:
            prob["key_padding_mask"] = Arr(rmask(pick([(B, Lk), (Lk,)]), 0.85))
        prob["causal"] = pick([True, "bottom-right", False, "top-left"])
        add("combo[%d] r%d B=%d H=%d Hkv=%d Lq=%d Lk=%d causal=%s"
            % (i, rank, B, H, Hkv, Lq, Lk, prob["causal"]), prob)


def gen_fully_masked():
    # Mask rows all false.
    prob = masked_base(3, 2, 2, 2, 6, 7)
    m = rmask((2, 6, 7), 0.8)
    m[0, 1] = False
    m[1, 4] = False
    m[1, 5] = False
    prob["mask"] = Arr(m)
    add("fully-masked rows via mask[B,Lq,Lk]", prob)
    # One batch entirely padding.
    prob = masked_base(3, 3, 1, 1, 5, 8)
    kpm = rmask((3, 8), 0.8)
    kpm[1] = False
    prob["key_padding_mask"] = Arr(kpm)
    add("fully-masked batch via key_padding_mask", prob)
    # Bottom-right with Lq > Lk: the first Lq - Lk rows see nothing.
    prob = masked_base(4, 2, 2, 1, 9, 4)
    prob["causal"] = "bottom-right"
    add("fully-masked rows via bottom-right Lq>Lk", prob)
    # A row of -inf bias.
    prob = masked_base(2, 1, 1, 1, 4, 5)
    b = rn(4, 5)
    b[2] = -np.inf
    prob["bias"] = Arr(b)
    add("fully-masked row via bias -inf", prob)
    # Head-dependent: one head's row dead, the other alive.
    prob = masked_base(4, 1, 2, 2, 3, 4)
    m = np.ones((1, 2, 3, 4), dtype=bool)
    m[0, 1, 0] = False
    prob["mask"] = Arr(m)
    add("fully-masked row in one head only", prob)
    # With projections: the output row is b_o, or zeros with no b_o.
    E, dim = 6, 8
    x = rn(2, 5, E)
    params = {"w_q": Arr(rn(dim, E)), "w_k": Arr(rn(dim, E)), "w_v": Arr(rn(dim, E)),
              "w_o": Arr(rn(E, dim)), "b_o": Arr(rn(E))}
    kpm = np.ones((2, 5), dtype=bool)
    kpm[0, :] = False
    add("fully-masked rows -> output row = b_o",
        {"input": Arr(x), "params": params, "num_heads": 2, "key_padding_mask": Arr(kpm)})
    params2 = {k: v for k, v in params.items() if k != "b_o"}
    m = np.ones((5, 5), dtype=bool)
    m[3] = False
    add("fully-masked rows -> output row = 0 (w_o, no b_o)",
        {"input": Arr(x), "params": params2, "mask": Arr(m)})
    # Everything masked.
    prob = masked_base(3, 2, 1, 1, 3, 3)
    prob["mask"] = Arr(np.zeros((3, 3), dtype=bool))
    add("every row fully masked", prob)


def mha_params(E, out_dim=None, bias=False, wo=False, bo=False):
    """nn.MultiheadAttention state-dict names."""
    p = {"in_proj_weight": Arr(rn(3 * E, E, s=0.4))}
    if bias:
        p["in_proj_bias"] = Arr(rn(3 * E, s=0.3))
    if wo:
        p["out_proj.weight"] = Arr(rn(out_dim or E, E, s=0.4))
        if bo:
            p["out_proj.bias"] = Arr(rn(out_dim or E, s=0.3))
    return p


def gen_params():
    # self: params inline, rank 2 and 3, with/without biases and w_o.
    for i in range(8):
        rank = 2 + i % 2
        B = 2 if rank == 3 else 1
        E = pick([3, 4, 8, 16])
        dim = pick([E, 4, 8])
        L = pick(SIZES)
        x = rn(*((B,) if rank == 3 else ()), L, E)
        p = {"w_q": Arr(rn(dim, E, s=0.5)), "w_k": Arr(rn(dim, E, s=0.5)),
             "w_v": Arr(rn(dim, E, s=0.5))}
        if i % 2:
            p.update(b_q=Arr(rn(dim)), b_k=Arr(rn(dim)), b_v=Arr(rn(dim)))
        if i % 4 >= 2:
            p["w_o"] = Arr(rn(E, dim, s=0.5))
            if i % 8 >= 4:
                p["b_o"] = Arr(rn(E))
        prob = {"input": Arr(x), "params": p}
        if i % 3 == 0:
            prob["variant"] = "self"
        add("params self[%d] r%d E=%d dim=%d L=%d" % (i, rank, E, dim, L), prob)
    # Own value size and output size: w_v [dv, E], w_o [E_out, dv].
    for i in range(3):
        E, dim, dv, eo = 6, 4, pick([2, 6, 10]), pick([3, 6, 9])
        H = pick([1, 2])
        x = rn(2, 13, E)
        p = {"w_q": Arr(rn(dim, E)), "w_k": Arr(rn(dim, E)), "w_v": Arr(rn(dv, E)),
             "w_o": Arr(rn(eo, dv)), "b_o": Arr(rn(eo))}
        add("params dv=%d eo=%d H=%d" % (dv, eo, H), {"input": Arr(x), "params": p, "num_heads": H})
    # params as a path to a .json file.
    for i, rel in enumerate(["params.json", "data/weights/p.json"]):
        E, dim = 5, 6
        x = rn(2, 7, E)
        p = {"w_q": Arr(rn(dim, E)), "w_k": Arr(rn(dim, E)), "w_v": Arr(rn(dim, E)),
             "b_q": Arr(rn(dim)), "w_o": Arr(rn(E, dim)), "b_o": Arr(rn(E))}
        add("params file %s" % rel, {"input": Arr(x), "params": ParamsFile(p, rel),
                                     "num_heads": 2 if i else 3, "variant": "multihead"})
    # nn.MultiheadAttention state-dict names.
    for i in range(5):
        E = pick([4, 8, 12])
        H = pick([d for d in (1, 2, 4) if E % d == 0])
        rank = 2 + i % 2
        x = rn(*((2,) if rank == 3 else ()), pick(SIZES), E)
        p = mha_params(E, bias=i % 2 == 0, wo=i != 3, bo=i % 3 != 2)
        prob = {"input": Arr(x), "params": ParamsFile(p) if i == 4 else p, "num_heads": H}
        if i % 2:
            prob["variant"] = "multihead"
        if i == 2:
            prob["key_padding_mask"] = Arr(rmask((x.shape[-2],), 0.8))
        add("params MHA names[%d] r%d E=%d H=%d" % (i, rank, E, H), prob)
    # masked-self: causal unless causal/mask/bias given; key_padding_mask keeps it causal.
    E = 6
    x = rn(2, 9, E)
    p = {"w_q": Arr(rn(E, E)), "w_k": Arr(rn(E, E)), "w_v": Arr(rn(E, E))}
    add("masked-self -> causal", {"input": Arr(x), "params": p, "variant": "masked-self"})
    add("masked-self + causal false", {"input": Arr(x), "params": p, "variant": "masked-self",
                                       "causal": False})
    add("masked-self + mask (no causal)", {"input": Arr(x), "params": p, "variant": "masked-self",
                                           "mask": Arr(rmask((9, 9), 0.7))})
    add("masked-self + bias (no causal)", {"input": Arr(x), "params": p, "variant": "masked-self",
                                           "bias": Arr(rbias((2, 9, 9), 0.1))})
    add("masked-self + key_padding_mask (still causal)",
        {"input": Arr(x), "params": p, "variant": "masked-self",
         "key_padding_mask": Arr(rmask((2, 9), 0.8))})
    add("masked-self + bottom-right", {"input": Arr(rn(9, E)), "params": p,
                                       "variant": "masked-self", "causal": "bottom-right"})
    # cross: input + context, query + context, different Ec and Lk.
    for i in range(5):
        E, Ec, dim = pick([4, 6]), pick([3, 5, 7]), pick([4, 8])
        H = pick([d for d in (1, 2, 4) if dim % d == 0])
        Hkv = pick([d for d in (1, 2, 4) if H % d == 0])
        kv_dim = dim // H * Hkv
        rank = 2 + i % 2
        lead = (2,) if rank == 3 else ()
        Lq, Lk = pick(SIZES), pick(SIZES)
        p = {"w_q": Arr(rn(dim, E)), "w_k": Arr(rn(kv_dim, Ec)), "w_v": Arr(rn(kv_dim, Ec))}
        if i % 2:
            p["w_o"] = Arr(rn(E, kv_dim // Hkv * H))
        src = "query" if i == 2 else "input"
        prob = {src: Arr(rn(*lead, Lq, E)), "context": Arr(rn(*lead, Lk, Ec)), "params": p,
                "variant": "cross", "num_heads": H, "num_kv_heads": Hkv}
        if i == 3:
            prob["causal"] = "bottom-right"
        add("cross[%d] r%d E=%d Ec=%d dim=%d H=%d Hkv=%d Lq=%d Lk=%d src=%s"
            % (i, rank, E, Ec, dim, H, Hkv, Lq, Lk, src), prob)
    # multihead with params, GQA.
    for i, (H, Hkv) in enumerate([(2, 2), (4, 4), (4, 2), (4, 1), (2, 1)]):
        E, hd = 8, pick([2, 4])
        dim, kv_dim = H * hd, Hkv * hd
        x = rn(2, pick(SIZES), E)
        p = {"w_q": Arr(rn(dim, E)), "w_k": Arr(rn(kv_dim, E)), "w_v": Arr(rn(kv_dim, E)),
             "b_q": Arr(rn(dim)), "b_k": Arr(rn(kv_dim)), "b_v": Arr(rn(kv_dim)),
             "w_o": Arr(rn(E, dim)), "b_o": Arr(rn(E))}
        prob = {"input": Arr(x), "params": p, "variant": "multihead", "num_heads": H}
        if Hkv != H:
            prob["num_kv_heads"] = Hkv
        if i == 2:
            prob["causal"] = True
        add("multihead params H=%d Hkv=%d hd=%d L=%d" % (H, Hkv, hd, x.shape[1]), prob)
    # query/key/value sources with params (nn.MultiheadAttention(q, k, v)).
    E = 4
    p = {"w_q": Arr(rn(8, E)), "w_k": Arr(rn(8, E)), "w_v": Arr(rn(8, E)), "w_o": Arr(rn(E, 8))}
    add("query/key/value + params, 2 heads",
        {"query": Arr(rn(2, 5, E)), "key": Arr(rn(2, 7, E)), "value": Arr(rn(2, 7, E)),
         "params": p, "num_heads": 2})


def gen_init():
    configs = [
        # rank, E, Ec, dim, H, Hkv, out_proj, variant, seed
        (2, 4, None, None, 1, 1, False, None, 0),
        (3, 6, None, None, 1, 1, False, "self", 1),
        (3, 8, None, 16, 2, 2, False, None, 42),
        (3, 8, None, None, 4, 4, True, None, 7),
        (2, 8, None, 8, 4, 2, True, None, 123456789012),
        (3, 6, None, None, 2, 2, True, "multihead", 3),
        (3, 6, None, 12, 4, 1, None, "multihead", 99),   # DECISION: preset adds w_o
        (3, 5, 3, 8, 2, 2, False, "cross", 5),
        (2, 4, 7, None, 2, 1, True, "cross", 11),
        (3, 6, None, None, 1, 1, False, "masked-self", 13),
        (3, 33, None, 64, 2, 2, True, None, 2024),
        (3, 4, None, 2, 1, 1, False, None, 2 ** 40 + 3),
    ]
    for n, (rank, E, Ec, dim, H, Hkv, op, var, seed) in enumerate(configs):
        lead = (2,) if rank == 3 else ()
        L = pick(SIZES)
        init = {"seed": seed}
        if dim is not None:
            init["dim"] = dim
        if op is not None:
            init["output_projection"] = op
        prob = {"input": Arr(rn(*lead, L, E)), "init": init}
        if Ec is not None:
            prob["context"] = Arr(rn(*lead, pick(SIZES), Ec))
        if H > 1:
            prob["num_heads"] = H
        if Hkv != H:
            prob["num_kv_heads"] = Hkv
        if var:
            prob["variant"] = var
        add("init[%d] seed=%d r%d E=%d Ec=%s dim=%s H=%d Hkv=%d w_o=%s %s"
            % (n, seed, rank, E, Ec, dim, H, Hkv, op, var), prob)
    # Extension from layer.hpp, not in the contract: init "bias": true.
    for n, op in enumerate([False, True]):
        prob = {"input": Arr(rn(2, 6, 4)), "init": {"seed": 17 + n, "output_projection": op,
                                                    "bias": True}, "num_heads": 2}
        add("init[bias ext %d] w_o=%s" % (n, op), prob)


def gen_io():
    # Arrays as .npy (float32, float64) and .json files, relative to the problem's folder
    # (the binary runs from another folder).
    stores = ["npy32", "npy64", "json"]
    for i in range(6):
        rank = pick([2, 3, 4])
        B, H = (2, 2) if rank > 2 else (1, 1)
        Lq, Lk = pick(SIZES), pick(SIZES)
        q, k, v = qkv(rank, B, H, H, Lq, Lk, 4, 3)
        prob = {"query": Arr(q, stores[i % 3]), "key": Arr(k, stores[(i + 1) % 3]),
                "value": Arr(v, stores[(i + 2) % 3])}
        if rank > 2 and rank != 4:
            prob["num_heads"] = H
        add("files[%d] r%d q=%s k=%s v=%s" % (i, rank, stores[i % 3], stores[(i + 1) % 3],
                                              stores[(i + 2) % 3]), prob)
    add("files input npy64 + init", {"input": Arr(rn(2, 9, 6), "npy64"), "init": {"seed": 8}})
    add("files input/context npy32 + params file",
        {"input": Arr(rn(2, 5, 4), "npy32"), "context": Arr(rn(2, 8, 3), "npy32"),
         "params": ParamsFile({"w_q": Arr(rn(4, 4)), "w_k": Arr(rn(4, 3)),
                               "w_v": Arr(rn(4, 3))}, "cfg/params.json"),
         "variant": "cross"})
    # stdin, paths relative to the working folder.
    q, k, v = qkv(3, 2, 1, 1, 6, 7, 4, 5)
    add("stdin inline", {"query": Arr(q), "key": Arr(k), "value": Arr(v), "causal": True},
        where="stdin")
    q, k, v = qkv(2, 1, 1, 1, 6, 7, 4, 5)
    add("stdin npy paths", {"query": Arr(q, "npy32"), "key": Arr(k, "npy64"),
                            "value": Arr(v, "json"), "mask": Arr(rmask((6, 7)), "npy-bool")},
        where="stdin")
    # --output / --weights files.
    for i, (ext, rank) in enumerate([("npy", 3), ("npy", 4), ("npy", 2), ("json", 3),
                                     ("json", 2)]):
        B, H = (2, 2) if rank > 2 else (1, 2)
        Lq, Lk = pick(SIZES), pick(SIZES)
        prob = masked_base(rank, B, H, H, Lq, Lk)
        if i % 2:
            prob["causal"] = "bottom-right"
        add("--output/--weights .%s r%d Lq=%d Lk=%d" % (ext, rank, Lq, Lk), prob, out=ext)
    # --no-weights.
    for i, rank in enumerate([2, 3, 4]):
        B, H = (2, 2) if rank > 2 else (1, 2)
        Lq, Lk = pick(SIZES), pick(SIZES)
        prob = masked_base(rank, B, H, H if i != 2 else 1, Lq, Lk)
        prob["causal"] = pick([True, "bottom-right"])
        add("--no-weights r%d Lq=%d Lk=%d" % (rank, Lq, Lk), prob, out="no-weights")
    prob = masked_base(3, 2, 2, 2, 65, 113)
    add("--no-weights --output .npy", prob, out="no-weights-npy")
    prob = {"input": Arr(rn(2, 64, 8)), "init": {"seed": 5, "output_projection": True},
            "num_heads": 2, "variant": "masked-self"}
    add("--no-weights multihead init", prob, out="no-weights")
    # id and tokens are echoed.
    add("echo id and tokens",
        {"query": [[1, 0], [0, 1]], "key": [[1, 1], [0, 1], [1, 0]],
         "value": [[1, 2], [3, 4], [5, 6]], "id": {"n": 7, "tag": "x"},
         "query_tokens": ["a", "b"], "key_tokens": ["x", "y", "z"]}, check_echo=True)
    add("echo tokens (both)",
        {"input": [[1, 0], [0, 1], [1, 1]], "tokens": ["the", "cat", "sat"], "id": "s-1"},
        check_echo=True)
    # Flags: no JSON at all, and flags overriding the problem's fields.
    q, k, v = qkv(3, 2, 1, 1, 7, 9, 4, 3)
    add("flags -q -k -v (no JSON)", None, where="none",
        args=["-q", "data/q.npy", "-k", "data/k.npy", "-v", "data/v.npy"],
        files={"data/q.npy": Arr(q, "npy32"), "data/k.npy": Arr(k, "npy32"),
               "data/v.npy": Arr(v, "npy32")},
        ref_extra={"query": q, "key": k, "value": v})
    q, k, v = qkv(3, 2, 2, 2, 8, 6, 2, 3)
    kpm = rmask((2, 6), 0.8)
    add("flags --heads --scale --causal=bottom-right --key-padding", None, where="none",
        args=["--query", "data/q.npy", "--key", "data/k.npy", "--value", "data/v.npy",
              "--heads", "2", "--scale", "0.5", "--causal=bottom-right",
              "--key-padding", "data/kpm.npy"],
        files={"data/q.npy": Arr(q, "npy32"), "data/k.npy": Arr(k, "npy64"),
               "data/v.npy": Arr(v, "npy32"), "data/kpm.npy": Arr(kpm, "npy-bool")},
        ref_extra={"query": q, "key": k, "value": v, "num_heads": 2, "scale": 0.5,
                   "causal": "bottom-right", "key_padding_mask": kpm.astype(float)})
    q, k, v = qkv(3, 2, 1, 1, 6, 6, 4, 3)
    m = rmask((6, 6), 0.7)
    add("flags override problem (--scale, --causal, --mask)",
        {"query": Arr(q), "key": Arr(k), "value": Arr(v), "scale": 0.25},
        args=["--scale", "1", "--causal", "--mask", "data/m.npy"],
        files={"data/m.npy": Arr(m, "npy-bool")},
        ref_extra={"scale": 1.0, "causal": True, "mask": m.astype(float)})
    add("flags --variant dot", {"query": Arr(q), "key": Arr(k), "value": Arr(v)},
        args=["--variant", "dot"], ref_extra={"variant": "dot"})
    x = rn(2, 5, 4)
    add("flags --seed overrides init.seed", {"input": Arr(x), "init": {"seed": 1}},
        args=["--seed", "77"], ref_extra={"init": {"seed": 77}})


def gen_broadcast():
    """Masks and biases broadcast as SDPA does (numpy's rule; rank 3 stays [B, Lq, Lk]),
    for rank 3 and 4 inputs, B == H too. Generated last: the other cases stay as drawn."""
    stores = [("inline", None), ("inline", "int"), ("npy-bool", None), ("npy-u8", None),
              ("npy32", None), ("inline", "float"), ("json", None)]
    bstores_b = ["inline", "npy32", "npy64", "json"]
    bkinds = ["4B11k", "4111k", "4BHq1", "41H1k", "4B1q1", "21k", "2q1", "1k", "11", "3B1k",
              "31q1"]
    for i, kind in enumerate(bkinds):
        for rank in (3, 4):
            B, H = (2, 2) if i % 2 == 0 else (3, 4)
            Hkv = H if i % 3 else 1
            Lq, Lk = pick(SIZES), pick(SIZES)
            prob = masked_base(rank, B, H, Hkv, Lq, Lk)
            if (i + rank) % 2 == 1:
                prob["mask"] = Arr(rmask(mask_shape(kind, B, H, Lq, Lk), 0.8),
                                   *stores[i % len(stores)])
            else:
                prob["bias"] = Arr(rbias(mask_shape(kind, B, H, Lq, Lk), p_inf=0.2),
                                   bstores_b[i % len(bstores_b)])
                if i % 4 == 1:
                    prob["precision"] = "f64"
            add("broadcast %s[%s] r%d B=%d H=%d Hkv=%d Lq=%d Lk=%d"
                % ("mask" if "mask" in prob else "bias", kind, rank, B, H, Hkv, Lq, Lk), prob)


def gen_mha_parity():
    """nn.MultiheadAttention parity: head-averaged weights (field and flag), rank-4 weights
    kept rank 4, and "w_k": null as the explicit identity."""
    for n, (rank, B, H) in enumerate([(3, 2, 2), (2, 1, 4), (4, 2, 4), (4, 1, 1), (3, 3, 1)]):
        Lq, Lk = pick(SIZES), pick(SIZES)
        prob = masked_base(rank, B, H, H, Lq, Lk)
        if n % 2 == 0:
            prob["mask"] = Arr(rmask((B, 1, 1, Lk), 0.7))
        if n == 1:
            add("average heads flag r%d B=%d H=%d Lq=%d Lk=%d" % (rank, B, H, Lq, Lk), prob,
                args=["--average-heads"], ref_extra={"average_heads": True})
        else:
            prob["average_heads"] = True
            add("average_heads r%d B=%d H=%d Lq=%d Lk=%d" % (rank, B, H, Lq, Lk), prob)
    E = 6
    x = rn(2, 9, E)
    p = {"w_q": Arr(rn(E, E)), "w_k": None, "w_v": Arr(rn(4, E))}
    add("params w_k null = identity", {"input": Arr(x), "params": p, "num_heads": 2})


def gen_errors():
    bad = [
        ("query/key feature mismatch", {"query": rn(3, 4), "key": rn(5, 3), "value": rn(5, 2)}),
        ("key/value length mismatch", {"query": rn(3, 4), "key": rn(5, 4), "value": rn(6, 2)}),
        ("mask shape", {"query": rn(3, 4), "key": rn(5, 4), "value": rn(5, 2),
                        "mask": rmask((3, 6))}),
        ("bias shape", {"query": rn(2, 3, 4), "key": rn(2, 5, 4), "value": rn(2, 5, 2),
                        "bias": rn(3, 3, 5)}),
        ("key_padding_mask length", {"query": rn(3, 4), "key": rn(5, 4), "value": rn(5, 2),
                                     "key_padding_mask": rmask((4,))}),
        ("num_heads does not divide", {"query": rn(3, 4), "key": rn(5, 4), "value": rn(5, 3),
                                       "num_heads": 3}),
        ("num_kv_heads does not divide num_heads",
         {"query": rn(2, 3, 8), "key": rn(2, 5, 8), "value": rn(2, 5, 8), "num_heads": 4,
          "num_kv_heads": 3}),
        ("rank-4 num_heads disagrees", {"query": rn(1, 2, 3, 4), "key": rn(1, 2, 5, 4),
                                        "value": rn(1, 2, 5, 4), "num_heads": 4}),
        ("missing .npy file", {"query": "data/nope.npy", "key": rn(5, 4), "value": rn(5, 2)}),
        ("params w_q wrong shape", {"input": rn(3, 4), "params": {
            "w_q": rn(4, 5), "w_k": rn(4, 4), "w_v": rn(4, 4)}}),
    ]
    for name, prob in bad:
        ERRORS.append(ErrorCase(name, {k: (Arr(v) if isinstance(v, np.ndarray) else v)
                                       for k, v in prob.items()}))


if __name__ == "__main__":
    sys.exit(main((gen_basic, gen_rank4, gen_split_heads, gen_masks, gen_fully_masked,
                   gen_params, gen_init, gen_io, gen_errors, gen_broadcast, gen_mha_parity)))
