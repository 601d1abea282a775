#!/usr/bin/python3
"""Prints the NumPy-written .npz archives that tests/unit/npz_test.cpp embeds as hex literals.

Run it with Debian's python3-numpy and paste the output over the `npz_fixtures` table in
npz_test.cpp. The C++ tests need no files; this script records where the bytes (and the
expected float32 bit patterns) came from. It is not run by CTest.
"""
import io

import numpy as np

from npy_fixtures import cxx_bits, cxx_bytes

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


def archive(compressed):
    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **ARRAYS)
    return buffer.getvalue()


if __name__ == "__main__":
    for compressed in (False, True):
        name = "savez_compressed" if compressed else "savez"
        print(f"    // np.{name}(f, **ARRAYS)")
        print(f"    {{\"{name}\",")
        print(f"     {cxx_bytes(archive(compressed), 5)}}},")
    print()
    for name, array in ARRAYS.items():
        print(f"    {{\"{name}\", {{{', '.join(str(d) for d in array.shape)}}},")
        print(f"     {cxx_bits(array.astype('<f4'), 5)}}},")
