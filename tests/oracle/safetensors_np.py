"""A minimal safetensors reader and writer on NumPy (no `safetensors` package).

Format: an 8-byte little-endian header length N, N bytes of JSON header
{"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}},
padded with spaces, then the data region. Arrays are little-endian and C-contiguous.
"""
import json
import struct

import numpy as np

# dtype name -> (numpy storage dtype, bytes per element). BF16 and F8_E4M3 are kept as
# their raw bit patterns (uint16, uint8); formats.py decodes them.
DTYPES = {
    "BF16": np.dtype("<u2"),
    "F8_E4M3": np.dtype("u1"),
    "F32": np.dtype("<f4"),
    "I32": np.dtype("<i4"),
    "U8": np.dtype("u1"),
}


def encode(tensors, metadata=None):
    """tensors: list of (name, dtype name, array of DTYPES[dtype]) in data order.
    Returns the file's bytes."""
    header = {}
    chunks = []
    offset = 0
    for name, dtype, array in tensors:
        raw = np.ascontiguousarray(array, dtype=DTYPES[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(np.shape(array)),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def write(path, tensors, metadata=None):
    with open(path, "wb") as f:
        f.write(encode(tensors, metadata))


def read(path):
    """Returns ({name: (dtype name, array)}, metadata dict). Raises ValueError when the
    file is malformed."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError("file shorter than 8 bytes")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise ValueError("header length past the end of the file")
    header = json.loads(data[8:8 + n].decode())
    body = data[8 + n:]
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, entry in header.items():
        dtype = DTYPES[entry["dtype"]]
        begin, end = entry["data_offsets"]
        shape = tuple(entry["shape"])
        count = int(np.prod(shape, dtype=np.int64))
        if not 0 <= begin <= end <= len(body) or end - begin != count * dtype.itemsize:
            raise ValueError(f"tensor {name}: bad data_offsets")
        array = np.frombuffer(body[begin:end], dtype=dtype).reshape(shape)
        tensors[name] = (entry["dtype"], array)
    return tensors, metadata
