"""The numpy float64 reference of the per-head statistics and of attention rollout, written
from the contract's formulas (interface.md, "Per-head statistics"), for head_stats_test.py
and census_test.py. Input: weights from an independent numpy forward (forward_oracle.py) or
as attn returned them; never attn's statistics.
"""
import numpy as np

NAMES = ["entropy", "first_token", "previous_token", "self", "distance", "duplicate_token",
         "induction"]


def row_values(w, ids=None, keep=None):
    """w [H, L, L] of one batch row; ids [L] or None; keep [L] (1 = real token) or None.
    Returns {name: [per head: the values of its qualifying query rows]}."""
    n = w.shape[-1]
    real = np.arange(n) if keep is None else np.flatnonzero(keep)
    out = {k: [] for k in NAMES}
    for h in range(w.shape[0]):
        rows = {k: [] for k in NAMES}
        for p, i in enumerate(real):  # p: the query's position among real tokens
            a = w[h, i, real]  # the row's weights on the real keys, by position
            nz = a[a > 0]
            rows["entropy"].append(-(nz * np.log(nz)).sum())
            rows["first_token"].append(a[0])
            if p >= 1:
                rows["previous_token"].append(a[p - 1])
            rows["self"].append(w[h, i, i])
            rows["distance"].append((a * np.abs(p - np.arange(len(real)))).sum())
            if ids is not None:
                t = np.asarray(ids)[real]
                dup = [j for j in range(p) if t[j] == t[p]]
                if dup:
                    rows["duplicate_token"].append(a[dup].sum())
                ind = [j for j in range(p - 1) if t[j] == t[p]]
                if ind:
                    rows["induction"].append(a[np.array(ind) + 1].sum())
        for k in NAMES:
            out[k].append(rows[k])
    return out


def ref_head_stats(w, ids=None, keep=None):
    """{name: [H]}: each statistic's mean over the head's qualifying rows (NaN: none)."""
    v = row_values(w, ids, keep)
    return {k: np.array([np.mean(r) if r else np.nan for r in v[k]]) for k in NAMES}


def ref_rollout(ws, fusion="mean"):
    """ws [layers, H, L, L] in ascending layer order: R = Â_last ⋯ Â_first."""
    r = None
    for w in ws:
        a = {"mean": w.mean(0), "max": w.max(0), "min": w.min(0)}[fusion]
        a = 0.5 * a + 0.5 * np.eye(a.shape[-1])
        a = a / a.sum(-1, keepdims=True)
        r = a if r is None else a @ r
    return r
