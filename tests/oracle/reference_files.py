"""The documents and files around the numpy oracle (reference.py re-exports every name, so
the tests import reference only): problem documents with their array paths and the
"inf"/"-inf"/"nan" strings of our JSON, the pass/fail tally of an oracle script, and the
tests' one safetensors writer.
"""

import json
import math
import os
import struct

import numpy as np

ARRAY_FIELDS = ("query", "key", "value", "input", "context",
                "mask", "bias", "key_padding_mask")
NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


# ----------------------------------------------------------------------------- loading

def _from_json_value(v):
    """Nested JSON lists -> nested Python floats; "inf"/"-inf"/"nan" strings and booleans
    become numbers."""
    if isinstance(v, list):
        return [_from_json_value(x) for x in v]
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, str):
        if v not in NONFINITE:
            raise ValueError("not a number: %r" % v)
        return NONFINITE[v]
    return float(v)


def num(x):
    """Numbers of attn's JSON output as Python numbers: the "inf", "-inf" and "nan" strings
    become floats, nested lists stay lists."""
    if isinstance(x, str):
        return NONFINITE[x]
    if isinstance(x, list):
        return [num(y) for y in x]
    return x


class Tally:
    """The checks of one oracle script: check() counts and prints a FAIL line per failure,
    done() prints "N passed, M failed" and returns the exit code."""

    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, cond, detail=""):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL", name, detail)

    def done(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0


def load_array(value, base_dir):
    """An array field: nested JSON lists, or a path (relative to base_dir) of a .npy or
    .json file. Returned as float64 (booleans as 0/1)."""
    if isinstance(value, np.ndarray):
        return value.astype(np.float64)
    if isinstance(value, str):
        path = value if os.path.isabs(value) else os.path.join(base_dir, value)
        if path.endswith(".npy"):
            return np.load(path, allow_pickle=False).astype(np.float64)
        with open(path) as f:
            return np.array(_from_json_value(json.load(f)), dtype=np.float64)
    return np.array(_from_json_value(value), dtype=np.float64)


def load_problem(problem, base_dir):
    """Resolves every array field (and params) of a problem dict; other fields are kept."""
    p = dict(problem)
    for name in ARRAY_FIELDS:
        if name in p and p[name] is not None:
            p[name] = load_array(p[name], base_dir)
    if "params" in p and p["params"] is not None:
        params = p["params"]
        params_dir = base_dir
        if isinstance(params, str):
            path = params if os.path.isabs(params) else os.path.join(base_dir, params)
            with open(path) as f:
                params = json.load(f)
            # DECISION: array paths inside a params file are relative to that file's folder.
            params_dir = os.path.dirname(path)
        p["params"] = {k: (None if v is None else load_array(v, params_dir))
                       for k, v in params.items()}
    return p


def load_problem_file(path):
    with open(path) as f:
        problem = json.load(f)
    return load_problem(problem, os.path.dirname(os.path.abspath(path)))


# --- safetensors files (the tests' one writer) ----------------------------------------

def tensor_bytes(a, dtype):
    a = np.ascontiguousarray(a)
    if dtype == "F32":
        return a.astype("<f4").tobytes()
    if dtype == "F16":
        return a.astype("<f2").tobytes()
    if dtype == "F64":
        return a.astype("<f8").tobytes()
    if dtype == "BF16":
        bits = np.asarray(a, dtype=np.float32).view(np.uint32) >> np.uint32(16)
        return bits.astype("<u2").tobytes()
    if dtype == "I64":
        return a.astype("<i8").tobytes()
    if dtype == "U8":
        return a.astype("u1").tobytes()
    raise ValueError(dtype)


def safetensors_bytes(tensors, metadata=None):
    """tensors: list of (name, dtype, array). The data section in list order; the header
    padded with spaces to a multiple of 8, as the reference writer does."""
    header, blobs, offset = {}, [], 0
    for name, dtype, a in tensors:
        b = tensor_bytes(a, dtype)
        header[name] = {"dtype": dtype, "shape": list(np.shape(a)),
                        "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def write_safetensors(path, tensors, metadata=None):
    with open(path, "wb") as f:
        f.write(safetensors_bytes(tensors, metadata))
