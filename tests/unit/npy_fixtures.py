#!/usr/bin/python3
"""Prints the NumPy-written NPY files that tests/unit/npy_test.cpp embeds as hex literals.

Run it with Debian's python3-numpy and paste the output over the `numpy_fixtures` table in
npy_test.cpp. The C++ tests need no files; this script only records where the bytes (and
the expected float32 bit patterns) came from. It is not run by CTest.
"""
import io

import numpy as np


def npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def cxx_bytes(data, indent):
    """A C++ string_view literal, split into adjacent literals that fit 100 columns."""
    per_line = (100 - indent - 4) // 4
    chunks = [data[i:i + per_line] for i in range(0, len(data), per_line)] or [b""]
    lines = ['"' + "".join(f"\\x{b:02x}" for b in chunk) + '"' for chunk in chunks]
    return ("\n" + " " * indent).join(lines) + "sv"


def cxx_bits(array, indent):
    """The float32 bit patterns numpy's astype(float32) gives, as a braced list."""
    bits = np.ascontiguousarray(array, dtype="<f4").view("<u4").ravel()
    words = [f"0x{int(b):08x}u" for b in bits]
    per_line = (100 - indent - 4) // 13
    lines = [", ".join(words[i:i + per_line]) for i in range(0, len(words), per_line)]
    return "{" + (",\n" + " " * (indent + 1)).join(lines) + "}"


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
    for name, array in FIXTURES.items():
        print(f"    // {name}: shape {array.shape}, dtype {array.dtype.str}, "
              f"fortran_order={np.isfortran(array) and array.ndim > 1}")
        print(f"    {{\"{name}\",")
        print(f"     {cxx_bytes(npy(array), 5)},")
        print(f"     {cxx_bits(array.astype('<f4'), 5)}}},")
