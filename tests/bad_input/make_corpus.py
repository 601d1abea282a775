#!/usr/bin/python3
"""Writes the bad-input corpus: tests/bad_input/files/ and tests/bad_input/manifest.json.

Run with Debian's python3 (numpy) from the repository root and commit what it writes;
tests/cli/bad_input_test.py runs the manifest against a built attn.

manifest.json holds "generated" (big files the test writes at run time, each a list of
[latin-1 text, repeat count] parts, so that the repository stays small) and two lists:
- "bad": cases that must fail cleanly. Each has "name", "args" (attn's arguments; file
  names are relative to a fresh copy of files/), optional "stdin" (a file fed to stdin),
  "exit" (2 unless said otherwise), "stderr" (a regex the one "attn: error:" line must
  match), "outputs" (default true: for `compute`, "-o out.npy --weights w.json" are added;
  out.npy exists beforehand and must be untouched, w.json must not appear, and no other
  file may appear or change), and "requires" (a flag that must appear in
  `attn compute --help` for the case to run; otherwise it is skipped and reported).
- "valid": unusual but valid inputs. Each has "name", "args" and "reference": the files
  (or the problem) numpy reads to compute softmax(Q Kᵀ scale) V in float64, compared with
  the output and weights attn prints.
"""
import io
import json
import os
import shutil
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, "files")


def put(name, data):
    path = os.path.join(FILES, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(path, "wb") as f:
        f.write(data)


def save(name, a, version=None):
    path = os.path.join(FILES, name)
    with open(path, "wb") as f:
        if version is None:
            np.save(f, a, allow_pickle=False)
        else:
            np.lib.format.write_array(f, a, version=version, allow_pickle=False)


def npy_raw(header, payload=b"", major=1, minor=0, pad=True):
    h = header.encode("latin1")
    pre = 10 if major == 1 else 12
    if pad:
        h = h + b" " * ((64 - (pre + len(h) + 1) % 64) % 64) + b"\n"
    length = struct.pack("<H", len(h)) if major == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes([major, minor]) + length + h + payload


def dump(obj):
    return json.dumps(obj)


shutil.rmtree(FILES, ignore_errors=True)
os.makedirs(FILES)
rng = np.random.default_rng(2024)

# --- good building blocks ----------------------------------------------------------------
Q = rng.standard_normal((3, 4)).astype(np.float32)
K = rng.standard_normal((5, 4)).astype(np.float32)
V = rng.standard_normal((5, 2)).astype(np.float32)
save("q.npy", Q)
save("k.npy", K)
save("v.npy", V)
save("x3.npy", rng.standard_normal((2, 3, 4)).astype(np.float32))
save("k3.npy", rng.standard_normal((3, 5, 4)).astype(np.float32))
save("q4.npy", rng.standard_normal((1, 2, 3, 4)).astype(np.float32))
save("k4.npy", rng.standard_normal((1, 2, 5, 4)).astype(np.float32))
save("v4_bad.npy", rng.standard_normal((1, 2, 6, 4)).astype(np.float32))
save("k_e3.npy", rng.standard_normal((5, 3)).astype(np.float32))
save("v_l6.npy", rng.standard_normal((6, 2)).astype(np.float32))
save("mask_bad.npy", np.ones((3, 6), bool))
save("mask_b3.npy", np.ones((4, 3, 5), bool))
save("bias_bad.npy", np.zeros((3, 4), np.float32))
save("kpm_bad.npy", np.ones((4,), bool))
save("w44.npy", np.eye(4, dtype=np.float32))
save("w35.npy", np.ones((3, 5), np.float32))
save("q_nan.npy", np.array([[1, 2, 3, 4], [5, np.nan, 7, 8], [0, 0, 0, 0]], np.float32))
save("q_rank5.npy", np.zeros((1, 1, 1, 3, 4), np.float32))
save("q_rank1.npy", np.zeros((4,), np.float32))
save("q_scalar.npy", np.float32(2.0))
PROBLEM = {"query": "q.npy", "key": "k.npy", "value": "v.npy"}
INLINE = {"query": Q.tolist(), "key": K.tolist(), "value": V.tolist()}
put("good.json", dump(PROBLEM))
put("params_bad_shape.json", dump({"w_q": "w35.npy"}))
put("params_array.json", "[1, 2, 3]")
put("q_ragged.json", "[[1, 2, 3, 4], [5, 6, 7]]")
put("q_deep5.json", "[[[[[1, 2, 3, 4]]]]]")
# Big files are described here and written by the test at run time (see "generated").
GENERATED = {
    "q_deep_1e6.json": [["[", 1000000], ["]", 1000000]],
    "npy_v2_header_2mib.npy": [["\x93NUMPY\x02\x00\x00\x00\x20\x00", 1], [" ", 2 << 20]],
}
put("q_string.json", "[[1, 2, \"x\", 4]]")
put("q_crlf_bad.json", "[[1, 2,\r\n 3, 4],\r\n [5, 6, 7]]\r\n")
put("mask_strings.json", dump([["yes"] * 5] * 3))
put("tokens_3.json", dump(dict(PROBLEM, tokens=["a", "b", "c"])))
os.makedirs(os.path.join(FILES, "dir.npy"))
put("dir.npy/.keep", "")
put("q.txt", "[[1, 2, 3, 4]]")
put("npy_named.json", open(os.path.join(FILES, "q.npy"), "rb").read())
put("json_named.npy", dump(Q.tolist()))

# --- NPY defects -------------------------------------------------------------------------
good_npy = open(os.path.join(FILES, "q.npy"), "rb").read()
HDR = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }"
payload = Q.tobytes()
npy_defects = {
    "npy_bad_magic.npy": b"\x93NUMPZ" + good_npy[6:],
    "npy_empty.npy": b"",
    "npy_text.npy": b"just some text, not an array\n",
    "npy_preamble_cut.npy": good_npy[:9],
    "npy_version_4.npy": npy_raw(HDR, payload, major=4),
    "npy_version_1_1.npy": npy_raw(HDR, payload, minor=1),
    "npy_header_len_lies.npy": good_npy[:8] + b"\xff\x7f" + good_npy[10:],
    "npy_header_not_dict.npy": npy_raw("['descr', '<f4']", payload),
    "npy_header_missing_shape.npy": npy_raw("{'descr': '<f4', 'fortran_order': False, }", payload),
    "npy_header_unknown_key.npy": npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), 'extra': 1, }", payload),
    "npy_header_duplicate_key.npy": npy_raw("{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }", payload),
    "npy_header_unterminated.npy": npy_raw("{'descr': '<f4, 'fortran_order': False, 'shape': (3, 4), }", payload),
    "npy_header_garbage_after.npy": npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } junk", payload),
    "npy_shape_list.npy": npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': [3, 4], }", payload),
    "npy_shape_negative.npy": npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (3, -4), }", payload),
    "npy_shape_not_tuple.npy": npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (12), }", payload),
    "npy_fortran_maybe.npy": npy_raw("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3, 4), }", payload),
    "npy_dtype_complex.npy": npy_raw("{'descr': '<c8', 'fortran_order': False, 'shape': (3, 4), }", payload * 2),
    "npy_dtype_unicode.npy": npy_raw("{'descr': '<U4', 'fortran_order': False, 'shape': (3, 4), }", payload * 4),
    "npy_dtype_object.npy": npy_raw("{'descr': '|O', 'fortran_order': False, 'shape': (3, 4), }", payload * 2),
    "npy_dtype_datetime.npy": npy_raw("{'descr': '<M8[s]', 'fortran_order': False, 'shape': (3, 4), }", payload * 2),
    "npy_dtype_structured.npy": npy_raw("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3, 4), }", payload),
    "npy_dtype_f16_bytes.npy": npy_raw("{'descr': '<f16', 'fortran_order': False, 'shape': (3, 4), }", payload * 4),
    "npy_truncated_payload.npy": good_npy[:-7],
    "npy_trailing_bytes.npy": good_npy + b"\0\0\0\0",
    "npy_huge_shape.npy": npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 1000000000), }", payload),
    "npy_overflow_shape.npy": npy_raw("{'descr': '<f8', 'fortran_order': False, 'shape': (18446744073709551615, 3), }", payload),
    "npy_overflow_bytes.npy": npy_raw("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,), }", payload),
    "npy_v2_header_4gib.npy": b"\x93NUMPY\x02\x00\xff\xff\xff\xff{'descr'",
}
for name, data in npy_defects.items():
    put(name, data)

# --- unusual but valid -------------------------------------------------------------------
save("be_f4_q.npy", Q.astype(">f4"))
save("be_f8_k.npy", K.astype(">f8"))
save("be_i2_v.npy", np.round(V * 100).astype(">i2"))
save("fortran_q.npy", np.asfortranarray(Q))
save("fortran_be_x3.npy", np.asfortranarray(rng.standard_normal((2, 3, 4)).astype(">f4")))
save("f16_q.npy", Q.astype(np.float16))
save("f16_k.npy", K.astype(np.float16))
save("i1_q.npy", np.round(Q * 10).astype(np.int8))
save("i4_k.npy", np.round(K * 10).astype(np.int32))
save("i8_v.npy", np.round(V * 1000).astype(np.int64))
save("u1_q.npy", np.abs(np.round(Q * 10)).astype(np.uint8))
save("u2_k.npy", np.abs(np.round(K * 10)).astype(">u2"))
save("u8_v.npy", np.abs(np.round(V * 10)).astype(np.uint64))
save("bool_mask.npy", np.array([[1, 1, 0, 1, 0], [1, 0, 1, 1, 1], [0, 1, 1, 0, 1]], bool))
save("i8_mask.npy", np.array([[5, 1, 0, 1, 0], [1, 0, -3, 1, 1], [0, 1, 1, 0, 7]], np.int64))
save("bool_kpm.npy", np.array([True, True, False, True, True]))
save("v2_q.npy", Q, version=(2, 0))
save("v3_k.npy", K, version=(3, 0))
put("py2_long_v.npy", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (5L, 2L), }", V.tobytes()))
put("reordered_q.npy", npy_raw("{'shape': (3, 4), 'fortran_order': True, 'descr': '>f4'}",
                               Q.astype(">f4").tobytes(order="F")))
put("crlf_problem.json", json.dumps(INLINE, indent=2).replace("\n", "\r\n"))
put("crlf_q.json", json.dumps(Q.tolist(), indent=1).replace("\n", "\r\n"))
put("tabs_problem.json", json.dumps(INLINE, indent="\t"))

bad = []


def case(name, args, stderr, exit=2, outputs=True, stdin=None, requires=None):
    entry = {"name": name, "args": args, "exit": exit, "stderr": stderr, "outputs": outputs}
    if stdin is not None:
        entry["stdin"] = stdin
    if requires is not None:
        entry["requires"] = requires
    bad.append(entry)


def problem(name, doc, stderr, **kw):
    put(f"p_{name}.json", doc if isinstance(doc, (str, bytes)) else dump(doc))
    case(name, ["compute", f"p_{name}.json"], stderr, **kw)


# Malformed JSON problems.
problem("empty_file", "", r"p_empty_file\.json: invalid JSON")
problem("truncated", '{"query": [[1, 2]', r"invalid JSON")
problem("trailing_garbage", dump(PROBLEM) + " x", r"invalid JSON")
problem("single_quotes", "{'query': 'q.npy'}", r"invalid JSON")
problem("nan_literal", '{"query": [[NaN, 1, 2, 3]], "key": "k.npy", "value": "v.npy"}', r"invalid JSON")
problem("infinity_literal", '{"query": [[Infinity, 1, 2, 3]], "key": "k.npy", "value": "v.npy"}', r"invalid JSON")
problem("comment", '// c\n' + dump(PROBLEM), r"invalid JSON")
problem("bad_utf8", b'{"query": "q\xff.npy", "key": "k.npy", "value": "v.npy"}', r"invalid JSON")
problem("nul_bytes", b'{"query"\0: 1}', r"invalid JSON")
problem("binary_garbage", bytes(range(256)) * 4, r"invalid JSON")
problem("array_not_object", "[1, 2, 3]", r"expected a JSON object")
problem("number_not_object", "42", r"expected a JSON object")
problem("deep_id", '{"id": ' + "[" * 20000 + "]" * 20000 + ', "query": "q.npy"}',
        r"nested deeper than 128 levels")
problem("number_overflow", '{"query": [[1e400, 1, 2, 3]], "key": "k.npy", "value": "v.npy"}',
        r"number overflow")
problem("control_char_key", '{"query": "q.npy", "key": "k.npy", "value": "v.npy", "a\\nb\\u001b[31m": 1}',
        r"unknown field 'a\\x0ab\\x1b\[31m'")

# Arrays: ragged, deep, wrong types.
problem("ragged", dict(PROBLEM, query=[[1, 2, 3, 4], [5, 6, 7]]), r"query: \[1\]: expected 4 elements, got 3")
problem("ragged_deeper", dict(PROBLEM, query=[[[1, 2, 3, 4]], [[1, 2, 3, 4], [5]]]), r"query: \[1\]: expected 1 element, got 2")
problem("array_too_deep", dict(PROBLEM, query=[[[[[1, 2, 3, 4]]]]]), r"query: the array is nested deeper than rank 4")
problem("rank1_query", dict(PROBLEM, query=[1, 2, 3, 4]), r"query: expected a rank-2 .* got shape \[4\]")
problem("string_element", dict(PROBLEM, query=[[1, 2, "x", 4]]), r'query: \[0\]\[2\]: expected a number, got the string "x"')
problem("null_element", dict(PROBLEM, query=[[1, None, 3, 4]]), r"query: \[0\]\[1\]: expected a number, got null")
problem("object_element", dict(PROBLEM, query=[[1, {}, 3, 4]]), r"query: \[0\]\[1\]: expected a number, got an object")
problem("bool_in_query", dict(PROBLEM, query=[[True, 1, 2, 3]]), r"booleans are allowed only in masks")
problem("infinity_string", dict(PROBLEM, query=[["Infinity", 1, 2, 3]]), r'the string "Infinity"')
problem("empty_query", dict(PROBLEM, query=[]), r"query: expected a rank-2")
problem("number_query", dict(PROBLEM, query=5), r"query: expected an array or the path of a \.npy/\.json file, got number")
problem("missing_file", dict(PROBLEM, key="nope.npy"), r"key: .*nope\.npy: cannot read: No such file or directory")
problem("directory_path", dict(PROBLEM, key="dir.npy"), r"key: .*dir\.npy: cannot read: Is a directory")
problem("unknown_extension", dict(PROBLEM, query="q.txt"), r"q\.txt: unknown array format \(expected \.npy or \.json\)")
problem("json_file_ragged", dict(PROBLEM, query="q_ragged.json"), r"query: .*q_ragged\.json: \[1\]: expected 4 elements, got 3")
problem("json_file_deep5", dict(PROBLEM, query="q_deep5.json"), r"q_deep5\.json: the array is nested deeper than rank 4")
problem("json_file_deep_1e6", dict(PROBLEM, query="q_deep_1e6.json"), r"q_deep_1e6\.json: JSON nested deeper than 128 levels")
problem("json_file_string", dict(PROBLEM, query="q_string.json"), r"q_string\.json: \[0\]\[2\]: expected a number")
problem("json_file_crlf_ragged", dict(PROBLEM, query="q_crlf_bad.json"), r"q_crlf_bad\.json: \[1\]: expected 4 elements, got 3")
problem("mask_strings", dict(PROBLEM, mask="mask_strings.json"), r'mask: .*mask_strings\.json: \[0\]\[0\]: expected a number, got the string "yes"')
problem("npy_named_json", dict(PROBLEM, query="npy_named.json"), r"npy_named\.json: invalid JSON")
problem("json_named_npy", dict(PROBLEM, query="json_named.npy"), r"json_named\.npy: not an NPY file \(bad magic\)")
problem("rank5_npy", dict(PROBLEM, query="q_rank5.npy"), r"query: expected a rank-2 .* got shape \[1, 1, 1, 3, 4\]")
problem("rank1_npy", dict(PROBLEM, query="q_rank1.npy"), r"query: expected a rank-2 .* got shape \[4\]")
problem("scalar_npy", dict(PROBLEM, query="q_scalar.npy"), r"query: expected a rank-2 .* got shape \[\]")

# Every shape mismatch of the contract.
problem("key_features", dict(PROBLEM, key="k_e3.npy"), r"key")
problem("value_length", dict(PROBLEM, value="v_l6.npy"), r"value: expected shape \[1, 5, \*\], got \[1, 6, 2\]")
problem("key_batch", {"query": "x3.npy", "key": "k3.npy", "value": "k3.npy"}, r"key: expected shape \[2, \*, \*\], got \[3, 5, 4\]")
problem("rank4_query_rank2_key", {"query": "q4.npy", "key": "k.npy", "value": "v.npy"}, r"key: expected shape \[1, \*, \*, 4\], got \[5, 4\]")
problem("rank4_value", {"query": "q4.npy", "key": "k4.npy", "value": "v4_bad.npy"}, r"value: expected shape \[1, 2, 5, \*\], got \[1, 2, 6, 4\]")
problem("heads_not_dividing", dict(PROBLEM, num_heads=3), r"divisible|divide")
problem("kv_heads_not_dividing", dict(PROBLEM, num_heads=4, num_kv_heads=3), r"num_kv_heads: 3 does not divide num_heads 4")
problem("heads_disagree_rank4", {"query": "q4.npy", "key": "k4.npy", "value": "k4.npy", "num_heads": 3}, r"num_heads: 3 disagrees with query \[1, 2, 3, 4\]")
problem("mask_shape", dict(PROBLEM, mask="mask_bad.npy"), r"mask: expected shape \[Lq, Lk\] = \[3, 5\], got \[3, 6\]")
problem("mask_batch", dict(PROBLEM, mask="mask_b3.npy"), r"mask: expected shape \[B, Lq, Lk\] = \[1, 3, 5\] \(B may be 1\), got \[4, 3, 5\]")
problem("bias_shape", dict(PROBLEM, bias="bias_bad.npy"), r"bias: expected shape \[Lq, Lk\] = \[3, 5\], got \[3, 4\]")
problem("key_padding_length", dict(PROBLEM, key_padding_mask="kpm_bad.npy"), r"key_padding_mask: expected shape \[1, 5\] or \[5\], got \[4\]")
problem("tokens_count", dict(PROBLEM, tokens=["a", "b", "c"]), r"tokens: queries \(3\) and keys \(5\) differ in length")
problem("query_tokens_count", dict(PROBLEM, query_tokens=["a", "b"]), r"query_tokens: expected 3 tokens, got 2")
problem("key_tokens_type", dict(PROBLEM, key_tokens=[1, 2, 3, 4, 5]), r"key_tokens: \[0\]: expected a string, got number")
problem("params_w_q_shape", {"input": "q.npy", "params": "params_bad_shape.json"}, r"w_q")
problem("params_in_proj_rows", {"input": "q.npy", "params": {"in_proj_weight": [[1, 0, 0, 0]] * 4}}, r"params\.in_proj_weight: first dimension 4 is not 3·embed_dim")
problem("params_unknown_weight", {"input": "q.npy", "params": {"w_x": [[1]]}}, r"params: unknown weight 'w_x'")
problem("params_bias_length", {"input": "q.npy", "params": {"w_q": "w44.npy", "w_k": None, "w_v": None, "b_q": [1, 2, 3]}}, r"bias of w_q: expected shape \[4\], got \[3\]")
problem("params_file_missing", {"input": "q.npy", "params": "nope.json"}, r"params: .*nope\.json: cannot read: No such file or directory")
problem("params_not_object", {"input": "q.npy", "params": 3}, r"params: expected an object")
problem("params_file_array", {"input": "q.npy", "params": "params_array.json"}, r"params: expected an object")
problem("params_duplicate", {"input": "q.npy", "params": {"w_q": "w44.npy", "w_k": None, "w_v": None, "q_proj_weight": "w44.npy"}}, r"params: both w_q and q_proj_weight give the same weight")
problem("context_and_key", dict(PROBLEM, context="k.npy"), r"context: give either context or key/value")
problem("query_and_input", dict(PROBLEM, input="q.npy"), r"query: give either query or input")
problem("key_without_value", {"query": "q.npy", "key": "k.npy"}, r"value: missing \(key and value come together\)")
problem("no_query_source", {"key": "k.npy", "value": "v.npy"}, r"problem: no query source")
problem("unknown_field", dict(PROBLEM, querry="q.npy"), r"problem: unknown field 'querry'")
problem("unknown_variant", dict(PROBLEM, variant="flash"), r"variant: unknown variant 'flash'")
problem("self_without_weights", {"input": "q.npy", "variant": "self"}, r"variant: 'self' needs projection weights")
problem("cross_without_context", {"input": "q.npy", "variant": "cross", "init": {"seed": 1}}, r"variant: 'cross' needs context")
problem("init_unknown_field", {"input": "q.npy", "init": {"seed": 1, "sead": 2}}, r"init: unknown field 'sead'")
problem("init_dim_zero", {"input": "q.npy", "init": {"seed": 1, "dim": 0}}, r"init\.dim: expected a positive integer, got 0")
problem("init_negative_seed", {"input": "q.npy", "init": {"seed": -1}}, r"init\.seed: expected a non-negative integer, got -1")
problem("init_and_params", {"input": "q.npy", "init": {"seed": 1}, "params": {}}, r"init: give either params or init")
save("q_wide.npy", np.zeros((1, 4096), np.float32))
# 4 x [2^20, 4096] float32 weights: 64 GiB, beyond the default limit (half the memory).
problem("init_huge_dim", {"input": "q_wide.npy", "init": {"seed": 1, "dim": 1048576, "output_projection": True}},
        r"init: random projection weights of dim 1048576 for features 4096 need 64\.0 GiB, more than the memory limit of .* \(--max-memory\)")
problem("scale_string", dict(PROBLEM, scale="abc"), r'scale: expected a finite number or null, got "abc"')
problem("causal_sideways", dict(PROBLEM, causal="sideways"), r'causal: expected false, true, "top-left" or "bottom-right", got "sideways"')
problem("heads_zero", dict(PROBLEM, num_heads=0), r"num_heads: expected a positive integer, got 0")
problem("heads_fraction", dict(PROBLEM, num_heads=1.5), r"num_heads: expected a positive integer, got 1\.5")
problem("heads_string", dict(PROBLEM, num_heads="2"), r'num_heads: expected a positive integer, got "2"')
problem("heads_huge_array", dict(PROBLEM, num_heads=list(range(10000))), r"num_heads: expected a positive integer, got \[0,1,2,.*\.\.\.$")

# Every NPY defect, as the query of a problem and as a flag.
npy_expect = {
    "npy_bad_magic.npy": r"not an NPY file \(bad magic\)",
    "npy_empty.npy": r"not an NPY file \(the file is empty\)",
    "npy_text.npy": r"not an NPY file \(bad magic\)",
    "npy_preamble_cut.npy": r"truncated header",
    "npy_version_4.npy": r"unsupported NPY version 4\.0",
    "npy_version_1_1.npy": r"unsupported NPY version 1\.1",
    "npy_header_len_lies.npy": r"truncated header: it says 32767 bytes",
    "npy_header_not_dict.npy": r"bad NPY header: expected the header to start with '\{'",
    "npy_header_missing_shape.npy": r"bad NPY header: missing key 'shape'",
    "npy_header_unknown_key.npy": r"bad NPY header: unexpected key 'extra'",
    "npy_header_duplicate_key.npy": r"bad NPY header: duplicate key 'descr'",
    "npy_header_unterminated.npy": r"bad NPY header",
    "npy_header_garbage_after.npy": r"bad NPY header: unexpected text after the closing",
    "npy_shape_list.npy": r"bad NPY header: expected a tuple",
    "npy_shape_negative.npy": r"bad NPY header: negative dimension",
    "npy_shape_not_tuple.npy": r"bad NPY header: 'shape' is not a tuple \(a 1-d shape is written \(N,\)\)",
    "npy_fortran_maybe.npy": r"bad NPY header: expected True or False for 'fortran_order'",
    "npy_dtype_complex.npy": r"unsupported dtype '<c8'",
    "npy_dtype_unicode.npy": r"unsupported dtype '<U4'",
    "npy_dtype_object.npy": r"unsupported dtype '\|O'",
    "npy_dtype_datetime.npy": r"unsupported dtype '<M8\[s\]'",
    "npy_dtype_structured.npy": r"bad NPY header: structured dtypes are not supported",
    "npy_dtype_f16_bytes.npy": r"unsupported dtype '<f16'",
    "npy_truncated_payload.npy": r"truncated: header says 48 bytes of data, file has 41",
    "npy_trailing_bytes.npy": r"trailing bytes: header says 48 bytes of data, file has 52",
    "npy_huge_shape.npy": r"truncated: header says 4000000000000000000 bytes of data",
    "npy_overflow_shape.npy": r"shape \(18446744073709551615, 3\) is too large \(its element count overflows\)",
    "npy_overflow_bytes.npy": r"shape \(4611686018427387904,\) is too large \(its byte size overflows\)",
    "npy_v2_header_4gib.npy": r"truncated header: it says 4294967295 bytes",
    "npy_v2_header_2mib.npy": r"bad NPY header: 2097152 bytes is too long",
}
for name, regex in npy_expect.items():
    short = name[len("npy_"):-len(".npy")]
    problem("npy_" + short, dict(PROBLEM, query=name), r"query: .*" + name.replace(".", r"\.") + ": " + regex)
for name in ["npy_truncated_payload.npy", "npy_huge_shape.npy", "npy_dtype_complex.npy"]:
    case("flag_" + name[:-4], ["compute", "-q", name, "-k", "k.npy", "-v", "v.npy"],
         name.replace(".", r"\.") + ": " + npy_expect[name])
    case("info_" + name[:-4], ["info", name], name.replace(".", r"\.") + ": " + npy_expect[name],
         outputs=False)
case("stdin_npy_truncated", ["compute", "-q", "-", "-k", "k.npy", "-v", "v.npy"],
     r"<stdin>: truncated", stdin="npy_truncated_payload.npy")
case("stdin_problem_garbage", ["compute", "-"], r"<stdin>: invalid JSON", stdin="p_binary_garbage.json")
case("heatmap_truncated_npy", ["heatmap", "npy_truncated_payload.npy", "-o", "h.png"],
     r"npy_truncated_payload\.npy: truncated", outputs=False)
case("heatmap_rank1", ["heatmap", "q_rank1.npy", "-o", "h.png"], r"q_rank1\.npy", outputs=False)
case("heatmap_ragged", ["heatmap", "q_ragged.json", "-o", "h.png"], r"q_ragged\.json: \[1\]", outputs=False)

# Bad flags and values.
case("flag_heads_zero", ["compute", "good.json", "--heads", "0"], r"--heads")
case("flag_heads_word", ["compute", "good.json", "--heads", "two"], r"--heads")
case("flag_scale_word", ["compute", "good.json", "--scale", "big"], r"--scale: expected a finite number or 'default', got 'big'")
case("flag_scale_inf", ["compute", "good.json", "--scale", "inf"], r"--scale: expected a finite number")
case("flag_causal_sideways", ["compute", "good.json", "--causal=sideways"], r"causal")
case("flag_variant_unknown", ["compute", "good.json", "--variant", "nope"], r"variant: unknown variant 'nope'")
case("flag_unknown", ["compute", "good.json", "--frobnicate"], r"frobnicate")
case("flag_no_problem", ["compute"], r"compute: no problem")
case("flag_output_extension", ["compute", "good.json", "-o", "out.txt"], r"out\.txt: unknown array format", outputs=False)
case("flag_format_xml", ["compute", "good.json", "--format", "xml"], r"--format")
case("flag_dtype_f16", ["compute", "good.json", "--dtype", "f16"], r"--dtype")
case("flag_threads_zero", ["compute", "good.json", "--threads", "0"], r"--threads")
case("flag_seed_negative", ["compute", "-x", "q.npy", "--seed", "-5"], r"--seed")
case("flag_no_weights_with_weights", ["compute", "good.json", "--no-weights"], r"--no-weights: cannot be combined with --weights")
case("flag_missing_query_file", ["compute", "-q", "nope.npy", "-k", "k.npy", "-v", "v.npy"], r"nope\.npy: cannot read: No such file or directory")
case("flag_problem_missing", ["compute", "nope.json"], r"nope\.json: cannot read: No such file or directory")
case("flag_problem_is_dir", ["compute", "dir.npy"], r"dir\.npy: cannot read: Is a directory")
# A bare `attn` prints its help and exits 0 (tests/cli/cli_conventions_test.py).
case("unknown_subcommand", ["frobnicate"], r"unknown command .frobnicate.", outputs=False)

# Limits (active once `compute --help` lists them; see tests/cli/bad_input_test.py).
save("long_q.npy", np.zeros((3000, 1), np.float32))
case("max_memory_refuses", ["compute", "-q", "long_q.npy", "-k", "long_q.npy", "-v", "long_q.npy",
                            "--max-memory", "16M"],
     r"--max-memory: this problem needs about .* \(the weights \[3000, 3000\] take .*\), more than the limit of 16\.0 MiB; without weights \(--no-weights\) it needs .*, which fits",
     requires="--max-memory")
case("max_memory_bad_value", ["compute", "good.json", "--max-memory", "lots"],
     r"--max-memory: expected a size", requires="--max-memory")
case("check_finite", ["compute", "-q", "q_nan.npy", "-k", "k.npy", "-v", "v.npy", "--check-finite"],
     r"query: .*q_nan\.npy: non-finite value nan at \[1, 1\] \(--check-finite\)", requires="--check-finite")
case("output_is_input", ["compute", "good.json", "-o", "q.npy"],
     r"--output: .*q\.npy is also the input of query; refusing to overwrite an input",
     outputs=False, requires="--max-memory")
case("weights_is_problem", ["compute", "good.json", "--weights", "good.json"],
     r"--weights: .*good\.json is also the input of PROBLEM", outputs=False, requires="--max-memory")

# .npz archives: torn, lying and hostile zip files (the reader is libzip behind our checks).
def npz_bytes(compressed, **arrays):
    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **arrays)
    return buffer.getvalue()


NPZ_ARGS = ["-k", "k.npy", "-v", "v.npy"]
good_npz = npz_bytes(True, query=Q.astype("<f4"))
put("npz_truncated.npz", good_npz[: len(good_npz) // 2])
case("npz_truncated", ["compute", "-q", "npz_truncated.npz", *NPZ_ARGS],
     r"query: .*npz_truncated\.npz: not a readable \.npz \(zip\) archive: ")
eocd = good_npz.rfind(b"PK\x05\x06")
moved = bytearray(good_npz)
moved[eocd + 16] ^= 0x5A  # the central directory's offset points elsewhere
put("npz_bad_central_directory.npz", bytes(moved))
case("npz_bad_central_directory", ["compute", "-q", "npz_bad_central_directory.npz", *NPZ_ARGS],
     r"query: .*npz_bad_central_directory\.npz: not a readable \.npz \(zip\) archive: ")
stored = bytearray(npz_bytes(False, query=Q.astype("<f4")))
stored[stored.find(b"PK\x01\x02") - 1] ^= 0x01  # last payload byte: the CRC-32 no longer matches
put("npz_crc_mismatch.npz", bytes(stored))
case("npz_crc_mismatch", ["compute", "-q", "npz_crc_mismatch.npz", *NPZ_ARGS],
     r"query: .*npz_crc_mismatch\.npz:query: corrupt archive member: .*CRC")
# 32 MiB of zeros deflate to about 32 KiB: refused by its declared size, before allocating.
put("npz_zip_bomb.npz", npz_bytes(True, query=np.zeros((1 << 23,), "<f4")))
case("npz_zip_bomb", ["compute", "-q", "npz_zip_bomb.npz", *NPZ_ARGS, "--max-memory", "8M"],
     r"query: .*npz_zip_bomb\.npz:query: the member is 32\.0 MiB uncompressed, more than the "
     r"memory limit of 8\.0 MiB \(--max-memory\)$")
put("npz_not_zip.npz", "query,key\n1,2\n")
case("npz_not_zip", ["compute", "-q", "npz_not_zip.npz", *NPZ_ARGS],
     r"query: .*npz_not_zip\.npz: not a readable \.npz \(zip\) archive: ")
put("npz_empty.npz", b"")
case("npz_empty", ["compute", "-q", "npz_empty.npz", *NPZ_ARGS], r"the file is empty$")
put("npz_positional.npz", npz_bytes(False, arr_0=Q.astype("<f4")))
case("npz_member_missing", ["compute", "-q", "npz_positional.npz", *NPZ_ARGS],
     r"npz_positional\.npz:query: no array 'query' in the archive \(it has: arr_0; name one as "
     r"FILE\.npz:NAME\)$")
put("npz_not_npy_member.npz", npz_bytes(False, query=Q.astype("<f4")).replace(b"\x93NUMPY", b"\x93NUMPX"))
case("npz_not_npy_member", ["compute", "-q", "npz_not_npy_member.npz", *NPZ_ARGS],
     r"query: .*npz_not_npy_member\.npz:query: corrupt archive member: .*CRC|not an NPY file")
put("model.pt", b"PK\x03\x04 a pickle")
case("pytorch_file", ["compute", "-q", "model.pt", *NPZ_ARGS],
     r"model\.pt: unknown array format .*PyTorch files are pickles")

valid = []


def ok(name, args, reference):
    valid.append({"name": name, "args": args, "reference": reference})


def qkv(q, k, v, **extra):
    return dict({"query": q, "key": k, "value": v}, **extra)


ok("big_endian", ["compute", "-q", "be_f4_q.npy", "-k", "be_f8_k.npy", "-v", "be_i2_v.npy"],
   qkv("be_f4_q.npy", "be_f8_k.npy", "be_i2_v.npy"))
ok("fortran_order", ["compute", "-q", "fortran_q.npy", "-k", "k.npy", "-v", "v.npy"],
   qkv("fortran_q.npy", "k.npy", "v.npy"))
ok("fortran_big_endian_batched", ["compute", "-x", "fortran_be_x3.npy"],
   qkv("fortran_be_x3.npy", "fortran_be_x3.npy", "fortran_be_x3.npy"))
ok("float16", ["compute", "-q", "f16_q.npy", "-k", "f16_k.npy", "-v", "v.npy"],
   qkv("f16_q.npy", "f16_k.npy", "v.npy"))
ok("signed_ints", ["compute", "-q", "i1_q.npy", "-k", "i4_k.npy", "-v", "i8_v.npy", "--scale", "0.01"],
   qkv("i1_q.npy", "i4_k.npy", "i8_v.npy", scale=0.01))
ok("unsigned_ints", ["compute", "-q", "u1_q.npy", "-k", "u2_k.npy", "-v", "u8_v.npy", "--scale", "0.01"],
   qkv("u1_q.npy", "u2_k.npy", "u8_v.npy", scale=0.01))
ok("bool_mask", ["compute", "good.json", "--mask", "bool_mask.npy"], qkv("q.npy", "k.npy", "v.npy", mask="bool_mask.npy"))
ok("int_mask_nonzero_attends", ["compute", "good.json", "--mask", "i8_mask.npy"],
   qkv("q.npy", "k.npy", "v.npy", mask="i8_mask.npy"))
ok("bool_key_padding", ["compute", "good.json", "--key-padding", "bool_kpm.npy"],
   qkv("q.npy", "k.npy", "v.npy", key_padding_mask="bool_kpm.npy"))
ok("npy_v2_v3_headers", ["compute", "-q", "v2_q.npy", "-k", "v3_k.npy", "-v", "v.npy"], qkv("v2_q.npy", "v3_k.npy", "v.npy"))
ok("python2_long_shape", ["compute", "-q", "q.npy", "-k", "k.npy", "-v", "py2_long_v.npy"], qkv("q.npy", "k.npy", "v.npy"))
ok("reordered_header_keys", ["compute", "-q", "reordered_q.npy", "-k", "k.npy", "-v", "v.npy", "--scale", "1"],
   qkv("reordered_q.npy", "k.npy", "v.npy", scale=1.0))
ok("crlf_problem", ["compute", "crlf_problem.json"], {"problem": "crlf_problem.json"})
ok("crlf_array_file", ["compute", "-q", "crlf_q.json", "-k", "k.npy", "-v", "v.npy"], qkv("q.npy", "k.npy", "v.npy"))
ok("tabs_problem", ["compute", "tabs_problem.json"], {"problem": "tabs_problem.json"})

with open(os.path.join(HERE, "manifest.json"), "w") as f:
    json.dump({"generated": GENERATED, "bad": bad, "valid": valid}, f, indent=1)
    f.write("\n")
print(f"{len(bad)} bad cases, {len(valid)} valid cases, {len(os.listdir(FILES))} files")
