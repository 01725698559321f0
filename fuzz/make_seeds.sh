#!/usr/bin/env bash
# Rewrites the binary seeds in fuzz/corpus/ (the text seeds there are
# written by hand): those of the codecs from psflow's own encoders
# (fuzz_make_seeds, built with the harnesses), the IDX files here.
#   fuzz/make_seeds.sh [BUILD_DIR]   (default build/clang-sanitize)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/clang-sanitize}
corpus=$root/fuzz/corpus
for d in tensor_codec ps_execute worker_requests safetensors checkpoint_index tfrecord idx; do
  mkdir -p "$corpus/$d"
done
"$build/fuzz/fuzz_make_seeds" "$corpus"
python3 - "$corpus/idx" <<'PY'
import gzip, struct, sys
out = sys.argv[1]
def idx(dtype, dims, payload):
    return struct.pack(">BBBB", 0, 0, dtype, len(dims)) + b"".join(struct.pack(">I", d) for d in dims) + payload
seeds = {
    "u8_2x3x2": idx(0x08, [2, 3, 2], bytes(range(12))),
    "i32_3": idx(0x0C, [3], struct.pack(">iii", -1, 0, 7)),
    "f32_2x2": idx(0x0D, [2, 2], struct.pack(">ffff", 1.5, -2, 0, 3)),
    "f64_1": idx(0x0E, [1], struct.pack(">d", 0.25)),
    "i16_0x4": idx(0x0B, [0, 4], b""),
    "short_payload": idx(0x08, [4, 4], bytes(10)),
}
seeds["u8_gzip"] = gzip.compress(seeds["u8_2x3x2"], mtime=0)
for name, data in seeds.items():
    with open(f"{out}/{name}", "wb") as f:
        f.write(data)
PY
echo "make_seeds: wrote the binary seeds under $corpus"
