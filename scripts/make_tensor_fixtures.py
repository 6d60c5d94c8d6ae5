#!/usr/bin/env python3
"""Writes tiny tensor files that Kiln's tensor I/O tests read: tests/data/npy/*.npy as numpy
writes them and tests/data/pb/*.pb as onnx writes them.

Every numeric fixture holds the values [-3, -2, -1, 0, 1, 2] (unsigned types: 0 to 5; bool:
alternating, starting with False) in shape (2, 3), so the tests know what to expect.

Run from the repository root after scripts/setup-python.sh:
    .venv/bin/python scripts/make_tensor_fixtures.py
"""

import argparse
import pathlib

import numpy as np
from onnx import helper, numpy_helper

DTYPES = {
    "f32": np.float32, "f64": np.float64, "f16": np.float16,
    "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "bool": np.bool_,
}


def values(dtype):
    if dtype == np.bool_:
        return (np.arange(6) % 2 == 1).reshape(2, 3)
    start = 0 if np.issubdtype(dtype, np.unsignedinteger) else -3
    return np.arange(start, start + 6).astype(dtype).reshape(2, 3)


def write_npy(out):
    out.mkdir(parents=True, exist_ok=True)
    for name, dtype in DTYPES.items():
        np.save(out / f"{name}.npy", values(dtype))
    np.save(out / "scalar_f32.npy", np.float32(2.5))
    np.save(out / "empty_f32.npy", np.zeros((0, 3), np.float32))
    np.save(out / "rank4_f32.npy", np.arange(12, dtype=np.float32).reshape(1, 2, 2, 3))
    with open(out / "v2_i32.npy", "wb") as f:
        np.lib.format.write_array(f, values(np.int32), version=(2, 0))
    # Files Kiln must refuse.
    np.save(out / "big_endian_f32.npy", values(np.float32).astype(">f4"))
    np.save(out / "fortran_f32.npy", np.asfortranarray(values(np.float32).T))


def write_pb(out):
    out.mkdir(parents=True, exist_ok=True)
    for name, dtype in DTYPES.items():
        v = values(dtype)
        raw = numpy_helper.from_array(v, f"raw_{name}")
        (out / f"raw_{name}.pb").write_bytes(raw.SerializeToString())
        elem = helper.np_dtype_to_tensor_dtype(v.dtype)
        typed = helper.make_tensor(f"typed_{name}", elem, v.shape, v.flatten(), raw=False)
        (out / f"typed_{name}.pb").write_bytes(typed.SerializeToString())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="tests/data", help="output folder")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    write_npy(out / "npy")
    write_pb(out / "pb")


if __name__ == "__main__":
    main()
