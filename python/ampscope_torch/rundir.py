"""rundir.py: writing a run directory as ampscope does (analyze/record.h,
analyze/record_lock.h, docs/RELIABILITY.md), in the standard library.

- The lock: an exclusive, non-blocking flock on DIR/.ampscope.lock, held for
  as long as the directory is written, whose text is "ampscope train PID\\n"
  (written over the old text, then cut to length).  KIND is "train": the
  folder is a training run to ampscope's own commands (record_owner.c
  recognises a training run by that kind), and a second writer, ampscope's
  or a Recorder's, is refused naming this process.
- run.json is written atomically: a temporary "run.json.tmp.PID" beside it,
  flushed and fsynced, renamed over it, the folder fsynced.
- CSV logs are append-only, one header line, flushed after each step's rows.
"""
import errno
import fcntl
import json
import math
import os

LOCK_FILE = ".ampscope.lock"
# the files a training run holds (record_owner.c: train_files)
RUN_FILES = ("run.json", "steps.csv", "tensors.csv", "updates.csv", "hist.csv", "eval.csv",
             "trace.csv", "trace_hist.csv", "checkpoint.safetensors", "train.log", "done.json",
             "wall_seconds")
RECORDER = "ampscope_torch.Recorder"

HEADERS = {
    "steps.csv": "step,epoch,loss,loss_scale,found_inf,skipped,lr",
    "tensors.csv": "step,layer,kind,dtype,scale,count,nonzero,nonfinite,flushed,"
                   "flushed_frac_of_nonzero,subnormal,subnormal_frac_of_nonzero,overflowed,"
                   "overflow_frac_of_nonzero,zero_frac_of_count,amax",
    "updates.csv": "step,layer,elements,nonzero_updates,lost,lost_frac_of_nonzero,"
                   "rel_update_error,predicted_lost,predicted_lost_frac_of_nonzero,skipped",
    "hist.csv": "step,layer,kind,bin,count",
    "eval.csv": "epoch,step,test_loss,test_accuracy",
    "trace.csv": "step,loss_scale,found_inf,count,zero,nonfinite,amax",
    "trace_hist.csv": "step,bin,count",
}


class RunDirError(Exception):
    """A run directory that cannot be written (in use, foreign, unwritable)."""


def f32(v):
    """An fp32 field (%.9g: reads back exactly)."""
    return "%.9g" % v


def f64(v):
    """A double field (%.17g)."""
    return "%.17g" % v


def frac(num, den):
    """num / den, or an empty field when den is 0 (undefined, read back as NaN)."""
    return "" if den == 0 else f64(num / den)


def name_ok(name):
    """record.h's rec_name_ok: 1 to 63 characters from [A-Za-z0-9_.-]."""
    ok = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
    return 0 < len(name) < 64 and all(c in ok for c in name)


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path, text):
    """Writes text to path atomically (atomic_file.h's af_write)."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(os.path.dirname(os.path.abspath(path)))


def write_json(path, obj):
    """run.json's layout: 2-space indent, reals exact, a final newline."""
    def clean(v):  # run.json holds finite reals only
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError("%s: a non-finite real %r" % (path, v))
        if isinstance(v, dict):
            for x in v.values():
                clean(x)
        if isinstance(v, list):
            for x in v:
                clean(x)
    clean(obj)
    write_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def _holder(fd):
    try:
        text = os.pread(fd, 127, 0).decode("utf-8", "replace").split()
        if len(text) >= 3 and text[0] == "ampscope":
            return "ampscope %s (pid %s)" % (text[1], text[2])
    except OSError:
        pass
    return None


def take_lock(folder, kind="train"):
    """Takes folder's lock (record_lock.c's protocol); returns the descriptor."""
    path = os.path.join(folder, LOCK_FILE)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        who = _holder(fd) if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN) else None
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise RunDirError("%s is in use by %s; wait for it or stop it"
                              % (folder, who or "another process (it holds %s)" % path)) from None
        raise RunDirError("flock %s: %s" % (path, e.strerror)) from None
    text = ("ampscope %s %d\n" % (kind, os.getpid())).encode()
    os.pwrite(fd, text, 0)
    os.ftruncate(fd, len(text))
    return fd


def _is_recorders(folder):
    try:
        with open(os.path.join(folder, "run.json"), encoding="utf-8") as f:
            run = json.load(f)
        return run.get("options", {}).get("recorder") == RECORDER
    except (OSError, ValueError, AttributeError):
        return False


def open_run_dir(folder, overwrite):
    """Makes or takes folder for a new record: returns the lock's descriptor.

    The folder is created when missing (its parent must exist).  An existing
    folder must be empty, or hold a Recorder's own record, or overwrite must
    be asked; then the files a training run holds are removed.  A file a run
    directory never holds is never removed: the folder is refused."""
    if not os.path.isdir(folder):
        if os.path.exists(folder):
            raise RunDirError("%s exists and is not a directory" % folder)
        parent = os.path.dirname(os.path.abspath(folder))
        if not os.path.isdir(parent):
            raise RunDirError("%s: its parent %s does not exist" % (folder, parent))
        try:
            os.mkdir(folder)
        except FileExistsError:
            pass
    fd = take_lock(folder)
    try:
        entries = [e for e in os.listdir(folder) if e != LOCK_FILE]
        if entries:
            foreign = [e for e in entries
                       if e not in RUN_FILES and ".tmp." not in e]
            if foreign:
                raise RunDirError("%s holds %s, which a run directory never holds: "
                                  "record elsewhere" % (folder, sorted(foreign)[0]))
            if not overwrite and not _is_recorders(folder):
                raise RunDirError("%s is not empty and is not a Recorder's record "
                                  "(overwrite=True replaces its ampscope files)" % folder)
            for e in entries:
                os.unlink(os.path.join(folder, e))
    except BaseException:
        os.close(fd)
        raise
    return fd


class Log:
    """An append-only CSV log: the header first, rows flushed on flush()."""

    def __init__(self, folder, name):
        self.path = os.path.join(folder, name)
        self.f = open(self.path, "w", encoding="utf-8")
        self.f.write(HEADERS[name] + "\n")
        self.f.flush()

    def row(self, *fields):
        self.f.write(",".join(str(x) for x in fields) + "\n")

    def flush(self):
        self.f.flush()

    def sync(self):
        self.f.flush()
        os.fsync(self.f.fileno())

    def close(self):
        if not self.f.closed:
            self.sync()
            self.f.close()
