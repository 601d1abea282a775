#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/.

Run with Debian's python3 (numpy) from the repository root; commit what it writes. The
seeds cover every dtype, byte order, order and version of NPY that numpy writes, JSON
arrays of every rank with the non-finite strings, every problem field and preset (naming
the fixture files of tests/fuzz/targets/fuzz_common.hpp), the bundled samples, and the
result documents `attn heatmap` reads, and safetensors checkpoints of every layout.
The hash-named files beside the seeds are what the fuzzers found, merged in with
`TARGET -merge=1 -use_counters=0 -use_value_profile=0 corpus/TARGET NEW_FINDS/` (new
coverage edges only, so the corpus stays small). Inputs that crashed a target go to
regressions/, never here. Re-running this script rewrites the named seeds only.
"""
import io
import json
import os
import struct

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")


def put(target, name, data):
    os.makedirs(os.path.join(CORPUS, target), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(CORPUS, target, name), "wb") as f:
        f.write(data)


def npy(a, version=None):
    buffer = io.BytesIO()
    if version is None:
        np.save(buffer, a, allow_pickle=False)
    else:
        np.lib.format.write_array(buffer, a, version=version, allow_pickle=False)
    return buffer.getvalue()


def npy_raw(header, payload=b"", major=1):
    h = header.encode("latin1")
    pre = 10 if major == 1 else 12
    pad = (64 - (pre + len(h) + 1) % 64) % 64
    h = h + b" " * pad + b"\n"
    length = struct.pack("<H", len(h)) if major == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes([major, 0]) + length + h + payload


rng = np.random.default_rng(5)

# --- npy --------------------------------------------------------------------------------
base = (rng.standard_normal((2, 3)) * 3).astype(np.float64)
for code in ["f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]:
    for order in "<>":
        a = (np.abs(base) if code[0] == "u" else base).astype(order + code)
        put("npy", f"{order.replace('<', 'le').replace('>', 'be')}_{code}.npy", npy(a))
put("npy", "b1.npy", npy(np.array([[True, False, True], [False, False, True]])))
put("npy", "fortran_f4.npy", npy(np.asfortranarray(base.astype("<f4"))))
put("npy", "fortran_be_i2_3d.npy", npy(np.asfortranarray(np.arange(24, dtype=">i2").reshape(2, 3, 4))))
put("npy", "v2.npy", npy(base.astype("<f4"), version=(2, 0)))
put("npy", "v3.npy", npy(base.astype("<f4"), version=(3, 0)))
put("npy", "scalar.npy", npy(np.float32(1.5)))
put("npy", "empty.npy", npy(np.zeros((0, 3), np.float32)))
put("npy", "rank4.npy", npy(rng.standard_normal((1, 2, 3, 2)).astype(np.float32)))
put("npy", "nonfinite.npy", npy(np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45], np.float32)))
put("npy", "f16_specials.npy", npy(np.array([65504, 6e-8, np.inf, np.nan, -0.0], np.float16)))
put("npy", "bad_magic.npy", b"\x93NUMPX\x01\x00" + npy(base)[8:])
put("npy", "truncated.npy", npy(base.astype("<f4"))[:-5])
put("npy", "trailing.npy", npy(base.astype("<f4")) + b"\0\0\0\0")
put("npy", "header_lies.npy", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (100, 100), }", b"\0" * 16))
put("npy", "huge_shape.npy", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"))
put("npy", "overflow_shape.npy", npy_raw("{'descr': '<f8', 'fortran_order': False, 'shape': (18446744073709551615, 2), }"))
put("npy", "structured.npy", npy_raw("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", b"\0" * 4))
put("npy", "complex.npy", npy_raw("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", b"\0" * 8))
put("npy", "object.npy", npy_raw("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", b"\0" * 8))
put("npy", "python2_long.npy", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 1L), }", b"\0" * 8))
put("npy", "reordered_keys.npy", npy_raw("{'shape': (2,), 'fortran_order': True, 'descr': '>f8'}", b"\0" * 16))
put("npy", "v2_header.npy", npy_raw("{'descr': '<u2', 'fortran_order': False, 'shape': (2, 2), }", b"\1\0" * 4, major=2))
put("npy", "preamble_only.npy", b"\x93NUMPY\x01\x00\xff\xff")
put("npy", "empty_file.npy", b"")

# --- json_array -------------------------------------------------------------------------
for i, text in enumerate([
    "[1, 2, 3]",
    "[[1, 0, 1], [0, 1, 1]]",
    "[[[1.5, -2.25]], [[\"inf\", \"-inf\"]]]",
    "[[[[\"nan\", 0.0, -0.0, 1e-45, 3.4028235e38]]]]",
    "[[true, false], [false, true]]",
    "[[1, true], [0, false]]",
    "[]",
    "[[], []]",
    "[[[[[1]]]]]",
    "[[1, 2], [3]]",
    "[[1, 2], 3]",
    "[[1, \"x\"]]",
    "[[1, null]]",
    "[[1, {\"a\": 1}]]",
    "[1e400, -1e400, 123456789012345678901234567890]",
    "[18446744073709551615, -9223372036854775808]",
    "\r\n[\r\n [1,\r\n  2]\r\n]\r\n",
    "[1, 2",
    "{\"weights\": [[1]]}",
    "\"inf\"",
    "[\"Infinity\", \"NaN\"]",
]):
    put("json_array", f"seed_{i:02d}.json", text)
put("json_array", "deep.json", "[" * 300 + "]" * 300)

# --- problem ----------------------------------------------------------------------------
problems = {
    "files_qkv": {"query": "q.npy", "key": "k.npy", "value": "v.npy"},
    "json_q": {"query": "q.json", "key": "k.npy", "value": "v.npy", "scale": 1},
    "self_init": {"input": "x.npy", "variant": "self", "init": {"seed": 3}},
    "masked_self": {"input": "x.npy", "variant": "masked-self", "init": {"seed": 1, "dim": 8, "bias": True}},
    "cross": {"input": "x.npy", "context": "ctx.npy", "variant": "cross", "init": {"seed": 2, "dim": 4}},
    "multihead": {"input": "x.npy", "variant": "multihead", "num_heads": 2, "init": {"seed": 7}},
    "gqa": {"input": "x.npy", "init": {"seed": 4, "dim": 8}, "num_heads": 4, "num_kv_heads": 2},
    "direct_heads": {"query": "q4.npy", "key": "k4.npy", "value": "v4.npy", "causal": "bottom-right"},
    "params_file": {"input": "q.npy", "params": "params.json"},
    "params_sub": {"input": "q.npy", "params": "sub/params.json", "num_heads": 2},
    "params_mha": {"input": "q.npy", "params": "mha.json", "num_heads": 2},
    "params_inline": {"query": [[1, 2], [3, 4]], "key": [[1, 0]], "value": [[5, 6]],
                      "params": {"w_q": [[1, 0], [0, 1]], "b_q": [0.5, -0.5], "w_o": [[1, 1]]}},
    "masks": {"query": "q.npy", "key": "k.npy", "value": "v.npy", "mask": "mask.npy",
              "bias": "bias.npy", "key_padding_mask": "kpm.npy"},
    "mask_inline": {"query": [[1, 0], [0, 1]], "key": [[1, 0], [0, 1]], "value": [[1], [2]],
                    "mask": [[True, False], [False, False]], "bias": [[0, "-inf"], [1, 2]]},
    "tokens": {"query": "q.npy", "key": "k.npy", "value": "v.npy",
               "query_tokens": ["a", "b"], "key_tokens": ["x", "y", "z"], "id": {"n": [1, 2]}},
    "odd_dtypes": {"query": "be.npy", "key": "f16.npy", "value": "u8.npy"},
    "v3_nan": {"query": "v3.npy", "key": "nan.npy", "value": "nan.npy", "causal": True},
    "empty": {"query": "empty.npy", "key": "k.npy", "value": "v.npy"},
    "empty_huge_init": {"input": "empty_huge.npy", "init": {"seed": 1}},
    "huge": {"query": "huge.npy", "key": "k.npy", "value": "v.npy"},
    "broken": {"query": "truncated.npy", "key": "bad_magic.npy", "value": "ragged.json"},
    "deep": {"query": "deep.json", "key": "k.npy", "value": "v.npy"},
    "notjson_params": {"input": "q.npy", "params": "notjson.json"},
    "abs_missing": {"query": "/nonexistent/q.npy", "key": "k.npy", "value": "v.npy"},
    "dot_variant": {"variant": "dot", "query": [[1, 0, 1]], "key": [[1, 0, 1], [0, 1, 0]],
                    "value": [[1, 2], [3, 4]]},
    "big_init": {"input": [[1, 2]], "init": {"seed": 1, "dim": 1048576, "output_projection": True}},
    "heads_mismatch": {"query": "q4.npy", "key": "k4.npy", "value": "v4.npy", "num_heads": 3},
    "selection": {"input": "x.npy", "init": {"seed": 4, "dim": 8}, "num_heads": 4,
                  "num_kv_heads": 2, "select_heads": "3,0-1", "query_rows": [1, None],
                  "return": ["lse", "head_stats"], "top_k": 2},
    "selection_direct": {"query": "q4.npy", "key": "k4.npy", "value": "v4.npy",
                         "select_heads": [0], "query_rows": "-2:", "causal": True},
}
for name, doc in problems.items():
    put("problem", name + ".json", json.dumps(doc, indent=1))
put("problem", "crlf.json", json.dumps(problems["files_qkv"], indent=2).replace("\n", "\r\n"))
for name in sorted(os.listdir(os.path.join(ROOT, "samples"))):
    if name.endswith(".json") and not name.endswith(".params.json"):
        with open(os.path.join(ROOT, "samples", name), "rb") as f:
            put("problem", "sample_" + name, f.read())

# --- batch_line -------------------------------------------------------------------------
with open(os.path.join(ROOT, "samples", "batch.jsonl"), "rb") as f:
    for i, line in enumerate(f.read().splitlines()):
        put("batch_line", f"sample_{i:02d}.jsonl", line + b"\n")
for name in ["files_qkv", "multihead", "masks", "tokens", "params_inline", "mask_inline",
             "direct_heads", "gqa", "big_init"]:
    put("batch_line", name + ".jsonl", json.dumps(dict(problems[name], id=name)) + "\n")
put("batch_line", "not_object.jsonl", "[1, 2, 3]\n")
put("batch_line", "bad_utf8_id.jsonl", b'{"id": "\xff\xfe", "query": 1}\n')
put("batch_line", "control_key.jsonl", '{"id": 1, "a\\nb": 2}\n')

# --- safetensors ------------------------------------------------------------------------
def safetensors(tensors, metadata=None, header_override=None, pad=0):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header_override if header_override is not None else header).encode()
    text += b" " * pad
    return struct.pack("<Q", len(text)) + text + data


def f32(shape, scale=0.1):
    return ("F32", shape, (np.arange(int(np.prod(shape)), dtype="<f4") * scale).tobytes())


E = 4
put("safetensors", "attn_layout.safetensors", safetensors({
    "w_q": f32((E, E)), "w_k": f32((E, E)), "w_v": f32((E, E)), "w_o": f32((E, E)),
    "b_q": f32((E,))}, metadata={"format": "pt"}))
put("safetensors", "torch_mha.safetensors", safetensors({
    "in_proj_weight": f32((3 * E, E)), "in_proj_bias": f32((3 * E,)),
    "out_proj.weight": f32((E, E)), "out_proj.bias": f32((E,))}))
put("safetensors", "gpt2.safetensors", safetensors({
    "c_attn.weight": f32((E, 3 * E)), "c_attn.bias": f32((3 * E,)),
    "c_proj.weight": f32((E, E)), "c_proj.bias": f32((E,))}))
put("safetensors", "llama_gqa.safetensors", safetensors({
    "q_proj.weight": f32((E, E)), "k_proj.weight": f32((E // 2, E)),
    "v_proj.weight": f32((E // 2, E)), "o_proj.weight": f32((E, E))}))
put("safetensors", "dtypes.safetensors", safetensors({
    "a": ("F16", (2, 2), np.array([1, -2, np.inf, np.nan], "<f2").tobytes()),
    "b": ("BF16", (2,), b"\x80\x3f\x00\xc0"),
    "c": ("F64", (1, 2), np.array([1e300, -0.0], "<f8").tobytes()),
    "d": ("I64", (1,), b"\0" * 8), "e": ("BOOL", (2,), b"\1\0"),
    "f": ("F32", (0, 3), b""), "g": ("F32", (), b"\0\0\x80\x3f")}))
put("safetensors", "empty_header.safetensors", safetensors({}))
put("safetensors", "overlap.safetensors", safetensors({}, header_override={
    "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
    "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}) + b"\0" * 12)
put("safetensors", "huge_shape.safetensors", safetensors({}, header_override={
    "a": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]}}) + b"\0" * 8)
put("safetensors", "length_lies.safetensors", struct.pack("<Q", 1 << 40) + b"{}")
put("safetensors", "padded_header.safetensors", safetensors({"w_q": f32((2, 2))}, pad=7))

# --- heatmap_input ----------------------------------------------------------------------
w = rng.random((2, 3, 4)).astype(np.float32)
w /= w.sum(-1, keepdims=True)
put("heatmap_input", "weights.npy", npy(w))
put("heatmap_input", "weights_2d.npy", npy(w[0]))
put("heatmap_input", "weights_4d_be.npy", npy(w[None].astype(">f8")))
put("heatmap_input", "weights.json", json.dumps(w[0].tolist()))
put("heatmap_input", "result.json", json.dumps({
    "output": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "weights": w[0].tolist(),
    "query_tokens": ["the", "cat", "sat"], "key_tokens": ["a", "b", "c", "d"]}))
put("heatmap_input", "result_nonfinite.json", json.dumps({
    "weights": [[0.5, "nan"], ["inf", 0.0]], "query_tokens": ["\u00e9", "\u4e2d"],
    "key_tokens": ["x", "y"]}))
put("heatmap_input", "zeros.json", "[[0, 0], [0, 0]]")
put("heatmap_input", "negative.json", "[[-1, 2], [3, -4]]")
put("heatmap_input", "no_weights.json", "{\"output\": [[1]]}")
put("heatmap_input", "rank1.json", "[1, 2, 3]")

# --- npz --------------------------------------------------------------------------------
def npz(compressed, **arrays):
    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **arrays)
    return buffer.getvalue()


npz_arrays = {"query": rng.standard_normal((2, 3)).astype("<f4"),
              "key": np.arange(6, dtype=">i2").reshape(3, 2),
              "mask": np.array([[True, False], [False, True]]),
              "f8": np.asfortranarray(np.arange(6, dtype="<f8").reshape(2, 3))}
put("npz", "savez.npz", npz(False, **npz_arrays))
put("npz", "savez_compressed.npz", npz(True, **npz_arrays))
put("npz", "positional.npz", npz(True, arr_0=np.float32(1.5)))
put("npz", "empty_archive.npz", npz(False))
put("npz", "not_npy_member.npz", npz(False, x=np.zeros(2, "<f4"))[:40] + b"garbage")
put("npz", "truncated.npz", npz(True, **npz_arrays)[:-30])
put("npz", "zeros_bomb.npz", npz(True, z=np.zeros(1 << 16, "<f4")))
