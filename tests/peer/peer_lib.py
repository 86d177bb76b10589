"""peer_lib.py: what the peer checks share (tests/peer, run by /usr/bin/python3).

safetensors read and written by hand (8-byte little-endian header length, the
JSON header, the raw little-endian buffer: https://huggingface.co/docs/safetensors),
Fashion-MNIST read from its gzip'd IDX files as ampscope reads them (a byte x
becomes float32(x) / float32(255), the pad border zero), the fortunes text's
windows as experiments/data_text.c cuts them, ampscope run as a
program, and the comparison of two gradients: the largest difference
relative to the peer tensor's largest magnitude.
"""
import gzip
import json
import os
import re
import struct
import subprocess
import sys

import numpy as np

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"
FORTUNES = "/usr/share/games/fortunes"
# data_text.c's ds_fortunes_files, in its order
FORTUNES_FILES = ["cookie", "definitions", "fortunes", "humorists", "literature", "people",
                  "platitudes", "science", "songs-poems", "tao"]
_DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "F64": np.dtype("<f8")}


def st_read(path):
    """The tensors of a safetensors file as float32 arrays, by name."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = blob[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        raw = data[begin:end]
        if t["dtype"] == "BF16":  # the upper half of a float32
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(raw, _DTYPES[t["dtype"]]).astype(np.float32)
        out[name] = a.reshape(t["shape"]).copy()
    return out


def st_write(path, tensors):
    """Writes {name: array} as F32 tensors, in the given order."""
    header, chunks, off = {}, [], 0
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        chunks.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(chunks))


def fashion_mnist(first, count, pad, directory=FASHION_MNIST):
    """Training samples first .. first+count-1: images (count, 1, 28+2pad, 28+2pad)
    float32 and labels int64."""
    with gzip.open(os.path.join(directory, "train-images-idx3-ubyte.gz"), "rb") as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
        assert magic == 2051 and first + count <= n, "not the IDX images ampscope reads"
        f.seek(16 + first * rows * cols)
        px = np.frombuffer(f.read(count * rows * cols), np.uint8).reshape(count, rows, cols)
    with gzip.open(os.path.join(directory, "train-labels-idx1-ubyte.gz"), "rb") as f:
        magic, n = struct.unpack(">II", f.read(8))
        assert magic == 2049 and first + count <= n, "not the IDX labels ampscope reads"
        f.seek(8 + first)
        labels = np.frombuffer(f.read(count), np.uint8).astype(np.int64)
    x = np.zeros((count, 1, rows + 2 * pad, cols + 2 * pad), np.float32)
    x[:, 0, pad:pad + rows, pad:pad + cols] = px.astype(np.float32) / np.float32(255)
    return x, labels


def text_token(byte):
    """data.h's vocabulary: tab 1, newline 2, ' '..'~' byte - 29, any other byte 0."""
    if byte == 9:
        return 1
    if byte == 10:
        return 2
    return byte - 29 if 32 <= byte <= 126 else 0


def fortunes(first, count, context, directory=FORTUNES):
    """Training windows first .. first+count-1 of the fortunes text, as
    ds_load_text and ds_gather give them: the files concatenated, one token a
    byte, the last floor(n / 10) tokens held out, window i the context + 1
    tokens from i * context of the rest; (ids (count, context) int64, the
    next tokens (count, context) int64)."""
    blob = b"".join(open(os.path.join(directory, f), "rb").read() for f in FORTUNES_FILES)
    table = np.array([text_token(b) for b in range(256)], np.int64)
    ids = table[np.frombuffer(blob, np.uint8)]
    train = ids[:len(ids) - len(ids) // 10]
    windows = (len(train) - context - 1) // context + 1
    assert first + count <= windows, "not the text ampscope reads"
    w = np.stack([train[i * context:i * context + context + 1]
                  for i in range(first, first + count)])
    return w[:, :-1].copy(), w[:, 1:].copy()


def run(cmd):
    """Runs ampscope; its stdout.  A failure ends the check (exit 1)."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("FAIL: %s exited %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()))
    return p.stdout


def grad_loss(stdout):
    """The loss `ampscope grad` prints ("... loss 2.30258 over samples ...")."""
    m = re.search(r": loss (\S+) over samples", stdout)
    if not m:
        sys.exit("FAIL: no loss in ampscope grad's output: %r" % stdout)
    return float(m.group(1))


def rel_error(ours, peer):
    """max |ours - peer| / max |peer|: 0 when both are all zero, inf when only the
    peer is, or when the shapes differ."""
    ours, peer = np.asarray(ours, np.float64), np.asarray(peer, np.float64)
    if ours.shape != peer.shape:
        return float("inf")
    diff = float(np.max(np.abs(ours - peer))) if ours.size else 0.0
    scale = float(np.max(np.abs(peer))) if peer.size else 0.0
    if scale == 0.0:
        return 0.0 if diff == 0.0 else float("inf")
    return diff / scale


def compare(what, ours, peer, bound, quiet=False, exact=None):
    """Compares {name: array} with the peer's, tensor by tensor (the same names),
    and a loss; prints one line per tensor; returns (passed, worst error).

    exact: the peer's values computed in float64.  A tensor then passes
    within the bound of either: PyTorch's fp32 is itself a rounding away from
    the exact answer, and at a kink (a ReLU whose input is a rounding error
    from zero; seen on resnet) the two fp32 results take different sides;
    ampscope within the bound of float64 is the stronger agreement.  The
    error held to the bound is the smaller of the two; both are printed."""
    passed, worst = True, 0.0
    names = sorted(set(ours) | set(peer))
    for name in names:
        if name not in ours or name not in peer:
            err = float("inf")
            note = "missing in " + ("ampscope" if name not in ours else "torch")
        else:
            err = rel_error(ours[name], peer[name])
            note = "max|torch| %.3g" % float(np.max(np.abs(peer[name])))
            if exact is not None and name in exact:
                e64 = rel_error(ours[name], exact[name])
                note += "; vs fp32 %.3g, vs fp64 %.3g" % (err, e64)
                err = min(err, e64)
        ok = err <= bound
        passed &= ok
        worst = max(worst, err)
        if not quiet:
            print("  %-5s %-24s rel. error %.3g (bound %.0e; %s)" % (
                "ok" if ok else "FAIL", what + " " + name, err, bound, note))
    return passed, worst
