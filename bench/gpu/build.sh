#!/usr/bin/env bash
# bench/gpu/build.sh: prepares, on a machine WITHOUT a GPU, everything a lent
# H100 machine needs to run issue 7's checks and benchmarks in one call
# (bench/gpu/run.sh): that machine has CUDA, cuBLAS and PyTorch but none of
# Debian's -dev packages.
#
#   bench/gpu/build.sh            -> build-gpu/ (the build) and
#                                    build-gpu-carry/ (what travels, ~30 MB):
#     bin/          stripped ampscope and every gpu-labelled test program
#     tests.txt     the gpu tests: name, then the command (paths relative
#                   to the repository root)
#     libs.tar.xz   the shared libraries they need that the GPU machine
#                   lacks (GSL, OpenBLAS, MPFR, GMP, jansson, gfortran...)
#     data/         a Fashion-MNIST subset (8192 training, 2048 test
#                   samples, plain IDX) for the LeNet-5 and ResNet timings
#     fortunes/     the fortunes text (Debian's fortunes files that
#                   ampscope's transformer reads) for its timings
#
# The PyTorch baseline (bench/torch_bench.py) and bench/gpu/perf_table.py
# are tracked files: they travel with the working tree.
#
# Then, with the device tool: run(command="bench/gpu/run.sh bench",
# carry=["build-gpu-carry"], timeout_s=600), and "bench/gpu/run.sh checks"
# in another call.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build-gpu
carry=$root/build-gpu-carry
jobs=$(nproc)
export CUDACXX=${CUDACXX:-/usr/local/cuda/bin/nvcc}
[[ -x $CUDACXX ]] || { echo "build.sh: no nvcc at $CUDACXX (set CUDACXX)" >&2; exit 2; }

mkdir -p "$build"
# Release, sm_90, no MPI (the GPU machine has no OpenMPI)
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DAMPSCOPE_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON >"$build/configure.log"
grep -q "ampscope: CUDA is ON" "$build/configure.log" ||
    { echo "build.sh: CUDA is not ON (see $build/configure.log)" >&2; exit 1; }
# Build everything first: ctest lists a test's command only once its program
# exists, so reading the list before building (as this script once did)
# gave tests without commands on a fresh clone.
cmake --build "$build" -j"$jobs"
# the gpu tests, from ctest's own list; every one must have its command now
ctest --test-dir "$build" -L gpu --show-only=json-v1 >"$build/gpu-tests.json"
python3 - "$build/gpu-tests.json" <<'PY'
import json, sys
tests = json.load(open(sys.argv[1]))["tests"]
missing = [t["name"] for t in tests if not t.get("command")]
if not tests or missing:
    sys.exit("build.sh: gpu tests without a command (not built?): %s" % (", ".join(missing) or "no gpu tests at all"))
PY

rm -rf "$carry"
mkdir -p "$carry/bin" "$carry/data" "$carry/fortunes" "$carry/lib"
python3 - "$build/gpu-tests.json" "$root" "$carry" <<'PY'
import json, os, shutil, sys
tests, root, carry = json.load(open(sys.argv[1]))["tests"], sys.argv[2], sys.argv[3]
with open(os.path.join(carry, "tests.txt"), "w") as out:
    for t in tests:
        cmd = t["command"]
        exe = cmd[0]
        if exe.startswith(root + "/build-gpu/"):
            name = os.path.basename(exe)
            shutil.copy2(exe, os.path.join(carry, "bin", name))
            cmd = ["build-gpu-carry/bin/" + name] + cmd[1:]
        cmd = [c.replace(root + "/build-gpu/", "build-gpu-carry/bin/").replace(root + "/", "")
               for c in cmd]
        for p in t.get("properties", []):
            if p["name"] == "ENVIRONMENT":
                env = [e.replace(root + "/build-gpu/", "build-gpu-carry/bin/")
                       .replace(root + "/", "") for e in p["value"]]
                cmd = ["env"] + env + cmd
        out.write(t["name"] + "\t" + "\t".join(cmd) + "\n")
PY
cp "$build/ampscope" "$carry/bin/"
# a test script may call programs by their build path: keep every executable it names
strip "$carry"/bin/* 2>/dev/null || true

# the shared libraries the GPU machine lacks: everything ldd finds except the
# C library, the C++ runtime and CUDA's own (the machine has those)
for f in "$carry"/bin/*; do
    ldd "$f" 2>/dev/null | awk '$3 ~ /^\// { print $3 }'
done | sort -u | grep -vE '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*|libcuda|libcudart|libcublas|libcublasLt)\.so' |
    while read -r lib; do cp -L "$lib" "$carry/lib/"; done
tar -C "$carry" -cJf "$carry/libs.tar.xz" lib
rm -rf "${carry:?}/lib"

# a plain-IDX Fashion-MNIST subset
python3 - /usr/share/datasets/fashion-mnist "$carry/data" <<'PY'
import gzip, struct, sys, os
src, dst = sys.argv[1], sys.argv[2]
for split, n in (("train", 8192), ("t10k", 2048)):
    with gzip.open(os.path.join(src, f"{split}-images-idx3-ubyte.gz")) as f:
        magic, count, rows, cols = struct.unpack(">IIII", f.read(16))
        body = f.read(n * rows * cols)
    with open(os.path.join(dst, f"{split}-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", magic, n, rows, cols) + body)
    with gzip.open(os.path.join(src, f"{split}-labels-idx1-ubyte.gz")) as f:
        magic, count = struct.unpack(">II", f.read(8))
        body = f.read(n)
    with open(os.path.join(dst, f"{split}-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", magic, n) + body)
PY
# the transformer's text: the files ampscope reads (experiments/data_text.c's list)
fortunes=/usr/share/games/fortunes
for f in cookie definitions fortunes humorists literature people platitudes science \
    songs-poems tao; do
    if [[ -f $fortunes/$f ]]; then
        cp -L "$fortunes/$f" "$carry/fortunes/"
    else
        echo "build.sh: no $fortunes/$f (apt-get install fortunes): the transformer's" \
            "bench train row will fail on the GPU machine" >&2
    fi
done
du -sh "$carry"
echo "ready: run(command=\"bench/gpu/run.sh bench\", carry=[\"build-gpu-carry\"], timeout_s=600)"
echo "       (and \"bench/gpu/run.sh checks\" in another call: each part fits in 10 minutes)"
