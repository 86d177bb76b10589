"""emu.py: ampscope's bit-exact emulator (libampscope-emu, emulate/fpe.h) from
Python, through ctypes: arrays of float32 rounded to fp16 or bf16 in any of the
eight rounding modes (the two stochastic ones with Philox's seed, stream and
index, as fpe_env holds them), with chop's counts of flushed, subnormal,
overflowed and inexact results.

Zero-copy: a C-contiguous float32 numpy array or CPU torch tensor is handed to
the library by its data pointer, and the result is written into a new array of
the same kind (or into out=).

    from ampscope_torch import emu
    bits, counts = emu.round_to_bits(x, "fp16", "stoch_prop", seed=7)
    y, counts = emu.round(x, "bf16")            # float32 values, rounded
    emu.to_float32(bits, "fp16")                # the patterns back, exactly

The library is found (find_library) from, in order: the path given, the
environment variable AMPSCOPE_EMU_LIB, the build tree this package sits in
(build/emulate/ beside python/), then the installed library
(libampscope-emu.so.0.1 / libampscope-emu.so in the dynamic linker's path,
sys.prefix/lib, /usr/local/lib).
"""
import ctypes
import ctypes.util
import os
import sys
from collections import namedtuple

FORMATS = {"fp16": 0, "f16": 0, "bf16": 1, "fp32": 2, "f32": 2}
# fpe_round, with TestFloat's names and the short ones `ampscope emu eval` takes
MODES = {"near_even": 0, "near_maxMag": 1, "minMag": 2, "min": 3, "max": 4, "odd": 5,
         "stoch_prop": 6, "stoch_equal": 7,
         "rne": 0, "rna": 1, "rz": 2, "rd": 3, "ru": 4, "ro": 5, "sr": 6, "sr_equal": 7}
NAN_SPECS = {"x86": 0, "canonical": 1, "cuda": 2}

Counts = namedtuple("Counts", "flushed subnormal overflowed inexact")
Counts.__doc__ = """chop's counts (fpe_chop_counts): nonzero finite inputs whose
result is zero, subnormal results, finite inputs whose rounding overflowed, and
results that differ from their input."""


class FpeEnv(ctypes.Structure):
    """fpe_env, field for field (emulate/fpe.h)."""
    _fields_ = [("round", ctypes.c_uint8), ("tininess", ctypes.c_uint8), ("ftz", ctypes.c_uint8),
                ("daz", ctypes.c_uint8), ("nan", ctypes.c_uint8), ("flags", ctypes.c_uint8),
                ("sr_stream", ctypes.c_uint32), ("sr_seed", ctypes.c_uint64),
                ("sr_index", ctypes.c_uint64)]


class FpeChopCounts(ctypes.Structure):
    _fields_ = [("flushed", ctypes.c_uint64), ("subnormal", ctypes.c_uint64),
                ("overflowed", ctypes.c_uint64), ("inexact", ctypes.c_uint64)]


class EmuError(Exception):
    """The library could not be found or refused a call."""


def _candidates(path):
    if path:
        return [path]
    out = []
    if os.environ.get("AMPSCOPE_EMU_LIB"):
        return [os.environ["AMPSCOPE_EMU_LIB"]]
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))  # python/ampscope_torch -> the source tree
    for build in ("build", "build-release", "build-asan"):
        out.append(os.path.join(root, build, "emulate", "libampscope-emu.so"))
    found = ctypes.util.find_library("ampscope-emu")
    if found:
        out.append(found)
    for prefix in (sys.prefix, "/usr/local", "/usr"):
        for lib in ("lib", "lib64", "lib/x86_64-linux-gnu"):
            out.append(os.path.join(prefix, lib, "libampscope-emu.so"))
    out.append("libampscope-emu.so.0.1")
    return out


def find_library(path=None):
    """The path of libampscope-emu.so this module would load (see above)."""
    for c in _candidates(path):
        if os.path.isabs(c) and os.path.exists(c):
            return c
        if not os.path.isabs(c) and os.path.sep not in c:
            return c  # a name for the dynamic linker
        if os.path.exists(c):
            return os.path.abspath(c)
    return c  # the path given or AMPSCOPE_EMU_LIB, missing: loading it says so


class Library:
    """The loaded library with its functions' signatures set."""

    def __init__(self, path=None):
        where = find_library(path)
        try:
            self.lib = ctypes.CDLL(where)
        except OSError as e:
            raise EmuError("%s (build it: cmake --build build --target ampscope_emu_shared; "
                           "install it; or set AMPSCOPE_EMU_LIB)" % e) from None
        self.path = where
        L = self.lib
        P = ctypes.c_void_p
        for name in ("fpe_chop_f32_to_u16", "fpe_chop_f32"):
            f = getattr(L, name)
            f.argtypes = [ctypes.POINTER(FpeEnv), ctypes.c_int, P, P, ctypes.c_size_t,
                          ctypes.POINTER(FpeChopCounts)]
            f.restype = ctypes.c_int
        L.fpe_f32_to_f16.argtypes = [ctypes.POINTER(FpeEnv), ctypes.c_uint32]
        L.fpe_f32_to_f16.restype = ctypes.c_uint16
        L.fpe_f32_to_bf16.argtypes = [ctypes.POINTER(FpeEnv), ctypes.c_uint32]
        L.fpe_f32_to_bf16.restype = ctypes.c_uint16
        L.fpe_random_bits.argtypes = [ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint64]
        L.fpe_random_bits.restype = ctypes.c_uint32


_default = None


def library(path=None):
    """The library (loaded once per path; path None: the default search)."""
    global _default
    if path is not None:
        return Library(path)
    if _default is None:
        _default = Library()
    return _default


def make_env(mode="near_even", seed=0, stream=0, index=0, ftz=False, daz=False,
             tininess="after", nan="x86"):
    """An fpe_env: IEEE defaults but for what is given."""
    if isinstance(mode, str):
        if mode not in MODES:
            raise ValueError("mode %r: one of %s" % (mode, ", ".join(sorted(MODES))))
        mode = MODES[mode]
    if tininess not in ("after", "before"):
        raise ValueError("tininess: 'after' or 'before'")
    return FpeEnv(round=mode, tininess=0 if tininess == "after" else 1, ftz=int(bool(ftz)),
                  daz=int(bool(daz)), nan=NAN_SPECS[nan], flags=0, sr_stream=stream,
                  sr_seed=seed, sr_index=index)


def _format(fmt, sixteen):
    if fmt not in FORMATS or (sixteen and FORMATS[fmt] == 2):
        raise ValueError("format %r: fp16 or bf16%s" % (fmt, "" if sixteen else " (or fp32)"))
    return FORMATS[fmt]


def _is_torch(x):
    return type(x).__module__.startswith("torch")


def _pointer_in(x):
    """(pointer, n, kind) of a C-contiguous float32 array or CPU tensor."""
    if _is_torch(x):
        import torch
        if x.dtype != torch.float32 or x.device.type != "cpu" or not x.is_contiguous():
            raise TypeError("a contiguous float32 CPU tensor, got %s on %s%s" % (
                x.dtype, x.device, "" if x.is_contiguous() else " (not contiguous)"))
        return x.data_ptr(), x.numel(), "torch"
    import numpy as np
    if not isinstance(x, np.ndarray) or x.dtype != np.float32 or not x.flags["C_CONTIGUOUS"]:
        raise TypeError("a C-contiguous float32 numpy array or CPU torch tensor")
    return x.ctypes.data, x.size, "numpy"


def _output(x, kind, out, sixteen):
    if out is None:
        if kind == "torch":
            import torch
            # torch has no uint16 in 1.13: int16 holds the same bits
            return torch.empty(x.shape, dtype=torch.int16 if sixteen else torch.float32)
        import numpy as np
        return np.empty(x.shape, dtype=np.uint16 if sixteen else np.float32)
    return out


def _out_pointer(out, n, sixteen):
    if _is_torch(out):
        import torch
        ok = out.dtype in ((torch.int16,) if sixteen else (torch.float32,))
        if not ok or out.device.type != "cpu" or not out.is_contiguous() or out.numel() != n:
            raise TypeError("out: a contiguous CPU %s tensor of %d elements"
                            % ("int16" if sixteen else "float32", n))
        return out.data_ptr()
    import numpy as np
    want = np.uint16 if sixteen else np.float32
    if out.dtype not in ((np.uint16, np.int16) if sixteen else (np.float32,)) \
            or not out.flags["C_CONTIGUOUS"] or out.size != n or not out.flags["WRITEABLE"]:
        raise TypeError("out: a writable C-contiguous %s array of %d elements"
                        % (np.dtype(want).name, n))
    return out.ctypes.data


def _chop(fn_name, sixteen, x, fmt, out, env, lib, kw):
    lib = lib or library()
    env = env if env is not None else make_env(**kw)
    ptr, n, kind = _pointer_in(x)
    y = _output(x, kind, out, sixteen)
    counts = FpeChopCounts()
    rc = getattr(lib.lib, fn_name)(ctypes.byref(env), _format(fmt, sixteen), ptr,
                                   _out_pointer(y, n, sixteen), n, ctypes.byref(counts))
    if rc != 0:
        raise EmuError("%s: status %d" % (fn_name, rc))
    return y, Counts(counts.flushed, counts.subnormal, counts.overflowed, counts.inexact)


def round_to_bits(x, fmt="fp16", mode="near_even", seed=0, stream=0, index=0, out=None,
                  env=None, lib=None, **kw):
    """x (float32) rounded to fmt (fp16 or bf16) in mode: (uint16 bit patterns, Counts).

    Element i uses the random index index + i (stochastic modes), so a result
    depends on (seed, stream, index) alone.  A torch input gives an int16
    tensor holding the patterns (torch 1.13 has no uint16).  env: an FpeEnv
    to use instead (its sr_index advances by the array's length, as in C);
    other keywords (ftz, daz, tininess, nan) go to make_env."""
    kw.update(mode=mode, seed=seed, stream=stream, index=index)
    return _chop("fpe_chop_f32_to_u16", True, x, fmt, out, env, lib, kw)


def round(x, fmt="fp16", mode="near_even", seed=0, stream=0, index=0, out=None, env=None,
          lib=None, **kw):  # noqa: A001 (the operation's name)
    """x (float32) rounded to fmt (fp16, bf16 or fp32), as float32 values: (values, Counts).
    out may be x itself (in place)."""
    kw.update(mode=mode, seed=seed, stream=stream, index=index)
    return _chop("fpe_chop_f32", False, x, fmt, out, env, lib, kw)


def to_float32(bits, fmt="fp16"):
    """fp16 or bf16 bit patterns (uint16 or int16, numpy or torch) as float32
    values, exactly (NaNs keep their payload bits where the widening can)."""
    _format(fmt, True)
    if _is_torch(bits):
        import torch
        b = bits.to(torch.int32) & 0xFFFF
        if fmt == "bf16":  # the upper half of a float32 (the shift wraps in int32)
            return (b << 16).view(torch.float32)
        return bits.view(torch.float16).to(torch.float32)
    import numpy as np
    b = np.asarray(bits).view(np.uint16)
    if fmt == "bf16":
        return (b.astype(np.uint32) << 16).view(np.float32)
    return b.view(np.float16).astype(np.float32)



def random_bits(seed, stream, index, lib=None):
    """fpe_random_bits: the 32 random bits a stochastic rounding with (seed, stream)
    draws at index (word index & 3 of Philox4x32-10)."""
    return int((lib or library()).lib.fpe_random_bits(seed, stream, index))
