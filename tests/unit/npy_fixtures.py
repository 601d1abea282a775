#!/usr/bin/python3
"""Writes the NumPy-written NPY files of tests/unit/npy_test.cpp into tests/unit/fixtures/
(NAME.npy) with numpy's astype(float32) bit patterns of each (npy_float32_bits.json).

Run it with Debian's python3-numpy when a fixture is added; the C++ tests read the files
(ATTN_SOURCE_DIR) and never run numpy. It is not run by CTest.
"""
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES_DIR = os.path.join(HERE, "fixtures")


def float32_bits(array):
    """The float32 bit patterns numpy's astype(float32) gives, in C order."""
    return np.ascontiguousarray(array, dtype="<f4").view("<u4").ravel().tolist()


def write_json_lines(path, rows, brackets):
    """rows as one JSON value a line inside brackets ("[]" or "{}"): diffs stay readable."""
    with open(path, "w") as f:
        f.write(brackets[0] + "\n" + ",\n".join(" " + r for r in rows) + "\n" + brackets[1] + "\n")


FIXTURES = {
    # encode_npy must write exactly these bytes.
    "f4_2x3": np.arange(6, dtype="<f4").reshape(2, 3),
    # Fortran order and big endian, as numpy writes them.
    "be_i2_fortran_2x3": np.asfortranarray(np.array([[1, -2, 3], [-4, 5, 32767]], dtype=">i2")),
    "f8_fortran_2x3x2": np.asfortranarray(
        np.arange(12, dtype="<f8").reshape(2, 3, 2) * 0.5 - 1.0),
    # float16 specials: zeros, subnormals, the largest finite, infinities and NaN.
    "f2_specials": np.array(
        [0.0, -0.0, 1.0, -2.0, 65504.0, 6.103515625e-05, 5.960464477539063e-08,
         6.097555160522461e-05, np.inf, -np.inf, np.nan, 0.333251953125], dtype="<f2"),
    "be_f2_specials": np.array([5.960464477539063e-08, -65504.0, np.inf, 1.0], dtype=">f2"),
    "bool_3": np.array([True, False, True]),
    "u8_scalar": np.array(18446744073709551615, dtype="<u8"),
}

if __name__ == "__main__":
    os.makedirs(FIXTURES_DIR, exist_ok=True)
    for name, array in FIXTURES.items():
        np.save(os.path.join(FIXTURES_DIR, name + ".npy"), array, allow_pickle=False)
    write_json_lines(os.path.join(FIXTURES_DIR, "npy_float32_bits.json"),
                     [f"{json.dumps(n)}: {json.dumps(float32_bits(a.astype('<f4')))}"
                      for n, a in FIXTURES.items()], "{}")
