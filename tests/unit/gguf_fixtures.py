#!/usr/bin/env python3
"""Writes the GGUF fixtures of tests/unit/fixtures/gguf/ with llama.cpp's own gguf-py (its
GGUFWriter, its quantizers and its numpy dequantizers), so the files and the expected
values come from a writer and a decoder we did not write.

    python3 tests/unit/gguf_fixtures.py /path/to/llama.cpp/gguf-py [OUT_DIR]

gguf-py is plain Python + numpy; it is read from the given folder and never committed.
Files written (small, committed):
  quants.gguf           one [2, 256] tensor per type attn dequantizes: values quantized by
                        gguf-py where it can (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1),
                        and for every block type also random blocks ("<type>.random") with
                        finite fp16 scales (gguf-py cannot quantize the K-quants), plus one
                        IQ4_NL tensor that attn must refuse by name
  quants_expected.npz   gguf-py's float32 dequantization of every dequantizable tensor,
                        by tensor name (np.savez, uncompressed)
  metadata.gguf         metadata of every value type (nested arrays included), general.
                        alignment 64, tensors of rank 1 to 4 (F32, values 0, 1, 2, ...)
  metadata_expected.json  what metadata.gguf was given: {key: [type name, value]}, tensor
                        shapes (numpy order) and the data section's start
"""

import json
import os
import sys

import numpy as np


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.path.insert(0, os.path.abspath(sys.argv[1]))
    import gguf  # noqa: E402  (gguf-py, from the folder given)
    from gguf import GGMLQuantizationType as Q

    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "fixtures", "gguf")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20260527)

    # ---- quants.gguf ---------------------------------------------------------------------
    shape = (2, 256)
    values = rng.standard_normal(shape).astype(np.float32) * np.float32(0.05)
    values[0, :8] = [0.0, -0.0, 1.5, -2.25, 65504.0, 6e-8, -1e-5, 3.0]
    specials = values.copy()
    specials[1, :6] = [np.inf, -np.inf, np.nan, 1e-40, -1e38, 2.0 ** -24]

    w = gguf.GGUFWriter(os.path.join(out, "quants.gguf"), "quants")
    tensors = {}  # name -> (bytes or array as written, type)
    tensors["f32"] = (specials, Q.F32)
    tensors["f16"] = (gguf.quants.quantize(specials, Q.F16), Q.F16)
    tensors["bf16"] = (gguf.quants.quantize(specials, Q.BF16), Q.BF16)
    for name, qt in [("q8_0", Q.Q8_0), ("q4_0", Q.Q4_0), ("q4_1", Q.Q4_1),
                     ("q5_0", Q.Q5_0), ("q5_1", Q.Q5_1)]:
        tensors[name] = (gguf.quants.quantize(values, qt), qt)
    # Random blocks with finite fp16 scales at the offsets ggml-common.h gives.
    scale_offsets = {Q.Q8_0: [0], Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2],
                     Q.Q2_K: [80, 82], Q.Q3_K: [108], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2],
                     Q.Q6_K: [208], Q.IQ4_NL: [0]}
    for qt, offsets in scale_offsets.items():
        block, size = gguf.GGML_QUANT_SIZES[qt]
        n_blocks = shape[0] * shape[1] // block
        raw = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
        for off in offsets:
            scales = (rng.standard_normal(n_blocks) * 0.01).astype(np.float16)
            raw[:, off:off + 2] = scales.view(np.uint8).reshape(n_blocks, 2)
        tensors[qt.name.lower() + ".random"] = (raw.reshape(shape[0], -1), qt)

    expected = {}
    for name, (data, qt) in tensors.items():
        if qt in (Q.F32,):
            w.add_tensor(name, data)
        elif qt == Q.F16:
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, data, raw_dtype=qt)
        if qt != Q.IQ4_NL:
            deq = gguf.quants.dequantize(data, qt)
            expected[name] = np.ascontiguousarray(deq, dtype=np.float32).reshape(shape)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    np.savez(os.path.join(out, "quants_expected.npz"), **expected)

    # ---- metadata.gguf -------------------------------------------------------------------
    path = os.path.join(out, "metadata.gguf")
    w = gguf.GGUFWriter(path, "llama")
    w.data_alignment = 64
    w.add_uint32("general.alignment", 64)
    given = {"general.architecture": ["string", "llama"], "general.alignment": ["uint32", 64]}

    def add(kind, key, value, method):
        method(key, value)
        given[key] = [kind, value]

    add("uint8", "t.u8", 200, w.add_uint8)
    add("int8", "t.i8", -100, w.add_int8)
    add("uint16", "t.u16", 60000, w.add_uint16)
    add("int16", "t.i16", -30000, w.add_int16)
    add("uint32", "t.u32", 4000000000, w.add_uint32)
    add("int32", "t.i32", -2000000000, w.add_int32)
    add("float32", "t.f32", 0.1, w.add_float32)
    add("uint64", "t.u64", 2 ** 64 - 1, w.add_uint64)
    add("int64", "t.i64", -(2 ** 63), w.add_int64)
    add("float64", "t.f64", 0.1, w.add_float64)
    add("bool", "t.bool", True, w.add_bool)
    add("string", "t.string", "h\u00e9llo \u2581w\u00f6rld", w.add_string)
    add("string", "t.empty", "",  # add_string skips empty strings
        lambda k, v: w.add_key_value(k, v, gguf.GGUFValueType.STRING))
    add("array", "t.ints", [1, -2, 3], w.add_array)
    add("array", "t.floats", [0.5, -1.25], w.add_array)
    add("array", "t.strings", ["a", "", "\u2581b"], w.add_array)
    add("array", "t.bools", [True, False], w.add_array)
    add("array", "t.nested", [[1, 2], [3]], w.add_array)
    add("array", "t.deep", [[["x"]], [["y", "z"]]], w.add_array)
    add("array", "t.bytes", b"\x00\xff", w.add_array)
    given["t.bytes"] = ["array", [0, 255]]
    shapes = {"r1": (5,), "r2": (3, 4), "r3": (2, 3, 4), "r4": (1, 2, 1, 3)}
    for name, s in shapes.items():
        w.add_tensor(name, np.arange(int(np.prod(s)), dtype=np.float32).reshape(s))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    # Where gguf-py's own reader says the data start.
    reader = gguf.GGUFReader(path)
    with open(os.path.join(out, "metadata_expected.json"), "w") as f:
        json.dump({"metadata": given,
                   "tensors": {k: list(v) for k, v in shapes.items()},
                   "data_start": int(reader.data_offset)}, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
