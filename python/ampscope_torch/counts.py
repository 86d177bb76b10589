"""counts.py: ampscope's precision statistics (kernels/kernels.h: ak_stats) of a
torch tensor, computed on the tensor's device with torch reductions.

A finite nonzero value x's fate in a target format at a scale S is decided by
the exact product |x| * |S| rounded once to the target, to nearest even.  The
product is formed in float64, where it is exact: x is an fp16, bf16 or fp32
value (at most 24 significant bits, widened exactly) and S an fp32 value, so
the product has at most 48 significant bits and an exponent far inside
binary64's range.  It is then compared with the target's rounding thresholds
(kernels/elem/stats.h; checked against the emulator, see docs):

  flushed    p <= 2^(emin-p)                 half the smallest subnormal: the tie
                                             goes to zero, the even neighbour
  subnormal  2^(emin-p) < p < 2^emin - 2^(emin-p)   below the midpoint between
                                             the largest subnormal and 2^emin
  overflowed p >= 2^(emax+1) - 2^(emax-p)    the largest finite + half an ulp
                                             (the tie goes to infinity, even)

fp16: 2^-25, 2^-14 - 2^-25, 65520; bf16: 2^-134, 2^-126 - 2^-134,
2^128 - 2^119; fp32: 2^-150, 2^-126 - 2^-150, 2^128 - 2^104.  A NaN scale
fails every comparison and counts none of them, as in ampscope.

The histogram bins are floor(log2 |x|) of the value itself (unscaled), from
torch.frexp (exact), with "zero" and "nonfinite" bins; indices are ampscope's
(AK_HIST_BIN(e) = 1 + e + 149, zero 0, nonfinite 278).
"""
import torch

HIST_EMIN = -149
HIST_EMAX = 127
HIST_ZERO = 0
HIST_NONFINITE = HIST_EMAX - HIST_EMIN + 2
HIST_BINS = HIST_EMAX - HIST_EMIN + 3  # 279

# (emin, precision, emax) per target format
_FORMATS = {"fp16": (-14, 11, 15), "bf16": (-126, 8, 127), "fp32": (-126, 24, 127)}

# the fields of a count vector, in order (int64 on the device)
COUNT, ZERO, NONZERO, NONFINITE, FLUSHED, SUBNORMAL, OVERFLOWED = range(7)
N_COUNTS = 7


def thresholds(target):
    """(flush, below_normal, overflow): the exact float64 thresholds of target."""
    if target not in _FORMATS:
        raise ValueError("target %r: expected fp16, bf16 or fp32" % (target,))
    emin, p, emax = _FORMATS[target]
    half_min_sub = 2.0 ** (emin - p)
    return half_min_sub, 2.0 ** emin - half_min_sub, 2.0 ** (emax + 1) - 2.0 ** (emax - p)


def bin_label(i):
    """A histogram index as hist.csv writes it: "zero", "nonfinite" or e."""
    if i == HIST_ZERO:
        return "zero"
    if i == HIST_NONFINITE:
        return "nonfinite"
    return str(i - 1 + HIST_EMIN)


class Stats:
    """Statistics accumulated on a device: counts (int64[7]), amax (float64,
    of the finite |x|, unscaled) and the histogram (int64[279])."""

    def __init__(self, device):
        self.counts = torch.zeros(N_COUNTS, dtype=torch.int64, device=device)
        self.amax = torch.zeros((), dtype=torch.float64, device=device)
        self.hist = torch.zeros(HIST_BINS, dtype=torch.int64, device=device)

    def host(self):
        """(counts list, amax float, hist list): the only copy to the host."""
        return self.counts.tolist(), float(self.amax), self.hist.tolist()


def _widen(x):
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise TypeError("statistics of %s tensors: expected float16, bfloat16, float32 (or "
                        "float64 holding such values)" % x.dtype)
    return x.detach().reshape(-1).to(torch.float64).abs()


def accumulate(stats, x, target, scale=1.0, classify=True, hist=True):
    """Adds the statistics of tensor x (fp16, bf16 or fp32; a float64 tensor
    is taken as exact, its product with the scale too) for target at scale
    (an fp32 value, taken as its magnitude) into stats, on x's device."""
    a = _widen(x)
    finite = torch.isfinite(a)
    zero = a == 0
    nonzero = finite & ~zero
    c = stats.counts
    c[COUNT] += a.numel()
    c[ZERO] += zero.sum()
    c[NONZERO] += nonzero.sum()
    c[NONFINITE] += (~finite).sum()
    if classify:
        flush, below_normal, overflow = thresholds(target)
        s = abs(float(torch.tensor(float(scale), dtype=torch.float32)))
        if float(scale) == float(scale) and s != float(abs(float(scale))):
            raise ValueError("scale %r is not an fp32 value" % (scale,))
        p = a * s
        c[FLUSHED] += (nonzero & (p <= flush)).sum()
        c[SUBNORMAL] += (nonzero & (p > flush) & (p < below_normal)).sum()
        c[OVERFLOWED] += (finite & (p >= overflow)).sum()
    if a.numel():
        m = torch.where(finite, a, torch.zeros((), dtype=a.dtype, device=a.device)).max()
        torch.maximum(stats.amax, m, out=stats.amax)
    if hist:
        e = torch.frexp(a[nonzero])[1].to(torch.int64) - 1  # floor(log2 |x|)
        e = e.clamp(HIST_EMIN, HIST_EMAX)  # only a float64 input can leave the range
        idx = e - HIST_EMIN + 1
        stats.hist += torch.bincount(idx, minlength=HIST_BINS)[:HIST_BINS]
        stats.hist[HIST_ZERO] += zero.sum()
        stats.hist[HIST_NONFINITE] += (~finite).sum()
    return stats


def tensor_stats(x, target, scale=1.0):
    """The statistics of one tensor, on the host: a dict with ampscope's
    fields (count, zero, nonzero, nonfinite, flushed, subnormal, overflowed,
    amax) and hist {index: count} of the nonzero bins."""
    st = accumulate(Stats(x.device), x, target, scale)
    counts, amax, hist = st.host()
    out = dict(zip(("count", "zero", "nonzero", "nonfinite", "flushed", "subnormal",
                    "overflowed"), counts))
    out["amax"] = amax
    out["hist"] = {i: n for i, n in enumerate(hist) if n}
    return out
