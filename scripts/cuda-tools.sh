#!/usr/bin/env bash
# Unpacks what the compressed-fatbin and CUDA link tests need from NVIDIA's
# wheels on PyPI (the CUDA toolkit is no Debian package): ptxas, nvlink and
# fatbinary from
# nvidia-cuda-nvcc, cuobjdump from nvidia-cuda-cuobjdump (programs that run
# on the CPU; no GPU or driver is needed), and libnvjpeg.so.12 from the
# 5 MB nvidia-nvjpeg-cu12, a library NVIDIA built whose cubins are stored
# LZ4-compressed. Nothing is installed: the wheels are downloaded with
# Debian's pip (`pip download`, no install) and only those files are
# unzipped, into DIR/bin and DIR/lib.
#
#   bash scripts/cuda-tools.sh [DIR]   # default /opt/offload-kit/cuda-tools
#
# Does nothing when DIR already holds them (the marker file DIR/.complete,
# which records the wheel versions: a version changed here unpacks again).
set -euo pipefail

DIR=${1:-/opt/offload-kit/cuda-tools}
# wheel==version:member inside the wheel:folder of DIR it goes to
WHEELS=(
  "nvidia-cuda-nvcc==13.0.88:nvidia/cu13/bin/ptxas:bin"
  "nvidia-cuda-nvcc==13.0.88:nvidia/cu13/bin/fatbinary:bin"
  "nvidia-cuda-nvcc==13.0.88:nvidia/cu13/bin/nvlink:bin"
  "nvidia-cuda-cuobjdump==13.5.37:nvidia/cu13/bin/cuobjdump:bin"
  "nvidia-nvjpeg-cu12==12.4.0.76:nvidia/nvjpeg/lib/libnvjpeg.so.12:lib"
)
STAMP=$(printf '%s\n' "${WHEELS[@]}")

if [ -e "$DIR/.complete" ] && [ "$(cat "$DIR/.complete")" = "$STAMP" ]; then
  echo "cuda-tools: $DIR is ready"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$DIR.partial"
mkdir -p "$DIR.partial/bin" "$DIR.partial/lib"
for w in "${WHEELS[@]}"; do
  IFS=: read -r req member dest <<<"$w"
  name=${req%%==*}
  if [ ! -d "$work/$name" ]; then
    /usr/bin/python3 -m pip download -q --no-deps --only-binary=:all: \
      --platform manylinux2014_x86_64 --python-version 3 --implementation py \
      -d "$work/$name" "$req" >/dev/null
  fi
  whl=$(ls "$work/$name"/*.whl)
  /usr/bin/python3 - "$whl" "$member" "$DIR.partial/$dest" <<'EOF'
import os, shutil, sys, zipfile
whl, member, out = sys.argv[1:]
with zipfile.ZipFile(whl) as z, z.open(member) as src:
    dst = os.path.join(out, os.path.basename(member))
    with open(dst, "wb") as f:
        shutil.copyfileobj(src, f)
os.chmod(dst, 0o755 if out.endswith("/bin") else 0o644)
EOF
done
for t in ptxas fatbinary nvlink cuobjdump; do
  "$DIR.partial/bin/$t" --version >/dev/null || {
    echo "cuda-tools: $t from the wheel does not run" >&2
    exit 1
  }
done
printf '%s\n' "$STAMP" >"$DIR.partial/.complete"
rm -rf "$DIR"
mv "$DIR.partial" "$DIR"
echo "cuda-tools: $DIR is ready ($(du -sm "$DIR" | cut -f1) MB)"
