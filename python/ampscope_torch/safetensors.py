"""safetensors.py: a minimal safetensors writer (https://huggingface.co/docs/safetensors:
an 8-byte little-endian header length, the JSON header padded with spaces to
8 bytes, then the tensors' little-endian bytes), for handing tensors to
`ampscope inspect` without the safetensors package."""
import json
import struct

import torch

_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
           torch.float64: "F64"}


def _bytes(t):
    t = t.detach().to("cpu").contiguous().reshape(-1)
    if not t.numel():
        return b""
    u = t.view(torch.uint8)
    try:
        return u.numpy().tobytes()
    except (ImportError, RuntimeError):  # torch without numpy
        return bytes(u.tolist())


def save_file(tensors, path, metadata=None):
    """Writes {name: tensor} (float32, float16, bfloat16 or float64) to path."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        if t.dtype not in _DTYPES:
            raise TypeError("%s: dtype %s is not written" % (name, t.dtype))
        b = _bytes(t)
        header[name] = {"dtype": _DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
