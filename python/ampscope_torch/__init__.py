"""ampscope_torch: ampscope's run directories from PyTorch training loops
(Recorder), and the bit-exact emulator libampscope-emu from Python (emu).

    rec = ampscope_torch.Recorder(model, "runs/mine", target="fp16", scaler=scaler)
    ...
    rec.step(loss)        # each step, after backward / scaler.update()

`ampscope report runs/mine --out R` and `ampscope recommend runs/mine` read
what it writes.  ampscope_torch.emu needs numpy and the built library; the
Recorder needs only torch.
"""
__version__ = "0.1.0"

from .recorder import Recorder  # noqa: E402

__all__ = ["Recorder", "__version__"]
