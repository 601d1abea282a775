#!/usr/bin/python3
"""Writes the NumPy-written .npz archives of tests/unit/npz_test.cpp into tests/unit/fixtures/
(savez.npz, savez_compressed.npz) with each member's shape and numpy's astype(float32) bit
patterns (npz_members.json, in archive order).

Run it with Debian's python3-numpy when a member is added; the C++ tests read the files
(ATTN_SOURCE_DIR) and never run numpy. It is not run by CTest.
"""
import json
import os

import numpy as np

from npy_fixtures import FIXTURES_DIR, float32_bits, write_json_lines

# One member per dtype the NPY reader takes (both byte orders, C and Fortran order).
ARRAYS = {
    "f2": np.array([1.5, -0.0, np.inf], dtype="<f2"),
    "f4": np.array([[0.25, -1.0, 3.0], [1e-3, 2.0, -7.5]], dtype="<f4"),
    "f8_fortran": np.asfortranarray(np.arange(6, dtype="<f8").reshape(2, 3) / 3.0),
    "i1": np.array([-128, 0, 127], dtype="i1"),
    "i2_be": np.array([-2, 300, 32767], dtype=">i2"),
    "i4": np.array([-5, 6, 2147483647], dtype="<i4"),
    "i8": np.array([-9, 10, 2**40], dtype="<i8"),
    "u1": np.array([0, 1, 255], dtype="u1"),
    "u2": np.array([0, 2, 65535], dtype="<u2"),
    "u4_be": np.array([0, 3, 4294967295], dtype=">u4"),
    "u8": np.array([0, 4, 2**63], dtype="<u8"),
    "mask": np.array([[True, False, True]]),
}

if __name__ == "__main__":
    os.makedirs(FIXTURES_DIR, exist_ok=True)
    np.savez(os.path.join(FIXTURES_DIR, "savez.npz"), **ARRAYS)
    np.savez_compressed(os.path.join(FIXTURES_DIR, "savez_compressed.npz"), **ARRAYS)
    write_json_lines(os.path.join(FIXTURES_DIR, "npz_members.json"),
                     [json.dumps({"name": n, "shape": list(a.shape),
                                  "float32_bits": float32_bits(a.astype("<f4"))})
                      for n, a in ARRAYS.items()], "[]")
