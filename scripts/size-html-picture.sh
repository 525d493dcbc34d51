#!/usr/bin/env bash
# Makes docs/size-html.png, the picture of the HTML report in
# docs/scanners.md: `offload-kit size --html` of a directory holding CuPy's
# wheel, Debian's librocrand .deb (both from the real-libs cache,
# scripts/real-libs.sh) and NVIDIA's libnvjpeg (scripts/cuda-tools.sh),
# screenshot by Debian's headless Chromium (scripts/setup.sh).
#
#   cargo build --profile ci && bash scripts/size-html-picture.sh [BINARY]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${1:-$root/target/ci/offload-kit}
cache=$(bash "$root/scripts/real-libs.sh")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/in"
for f in cupy_cuda13x-13.6.0-cp312-cp312-manylinux2014_x86_64.whl librocrand1_5.3.3-4_amd64.deb; do
  ln "$cache/$f" "$tmp/in/$f" 2>/dev/null || cp "$cache/$f" "$tmp/in/$f"
done
cp /opt/offload-kit/cuda-tools/lib/libnvjpeg.so.12 "$tmp/in/"
(cd "$tmp" && "$bin" size in --html report.html >/dev/null)
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --user-data-dir="$tmp/profile" --window-size=1480,790 \
  --screenshot="$tmp/shot.png" "file://$tmp/report.html" 2>/dev/null
cp "$tmp/shot.png" "$root/docs/size-html.png"
echo "size-html-picture: docs/size-html.png, $(stat -c %s "$root/docs/size-html.png") bytes"
