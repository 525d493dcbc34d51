#!/usr/bin/env bash
# GPU checks of `offload-kit prune`, for a machine with an NVIDIA GPU of
# compute capability 9.0 (H100, H200), a CUDA toolkit (nvcc, cuSPARSE) and a
# Python venv holding torch, cupy and jax built for CUDA:
#
#   bash scripts/gpu-check/run.sh path/to/offload-kit OUTDIR
#
# 1. A fat binary no sm_90 device loads, emptied by `prune --keep sm_90`: the
#    program still starts, its sm_90 kernel runs, and the launch of the
#    emptied one fails with the same error as before pruning.
# 2. cuSPARSE's SpMV through the toolkit's libcusparse pruned to sm_90 gives
#    the same numbers as the library as shipped; pruned to sm_80 without
#    PTX it cannot run on this GPU (so the pruned library really is used).
# 3. The whole venv, hard-linked into a copy, pruned in place to sm_90 (and
#    the files that would keep no device image, with --allow-empty): torch,
#    cupy and jax compute the same bytes from both, and the venv's own files
#    are untouched (a rewritten file is a new file, not the old inode).
# Each step prints PASS or FAIL lines; the exit status is the FAIL count.
set -u
OK=$(readlink -f "$1")
OUTDIR=$(readlink -f "$2")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
W=${GPU_CHECK_WORK:-/tmp/gpu-check}
rm -rf "$W"; mkdir -p "$W" "$OUTDIR"; cd "$W"
fails=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
step() { echo; echo "== $* ($(date +%T))"; }
# timed NAME CMD...: runs CMD, then says its time (and peak RSS where
# /usr/bin/time exists) on stderr.
timed() {
  if [ -x /usr/bin/time ]; then /usr/bin/time -f "$1: %e s wall, %U s user, %M KiB peak" "${@:2}"; return; fi
  local s=$SECONDS r; "${@:2}"; r=$?; echo "$1: $((SECONDS - s)) s wall" >&2; return $r
}

step machine
nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader
nvcc --version | tail -n 2
"$OK" --version
PY=$(command -v python3)
VENV=$("$PY" -c 'import sys; print(sys.prefix)')
echo "python venv: $VENV (base $("$PY" -c 'import sys; print(sys.base_prefix)'))"
export XLA_PYTHON_CLIENT_PREALLOCATE=false

step "1. an emptied fatbin"
nvcc -arch=sm_90 -c "$HERE/emptied_a.cu" -o a.o &&
  nvcc -gencode arch=compute_80,code=sm_80 -c "$HERE/emptied_b.cu" -o b.o &&
  nvcc -x c++ -c "$HERE/emptied_main.cu" -o main.o &&
  nvcc a.o b.o main.o -o app_static &&
  nvcc -cudart shared a.o b.o main.o -o app_shared || fail "building the emptied-fatbin program"
for app in app_static app_shared; do
  [ -x $app ] || continue
  ./$app >$app.out 2>&1; echo "$app exit $?" >>$app.out
  "$OK" prune --keep sm_90 -o $app.pruned $app >$app.prune 2>&1; rc=$?
  cat $app.prune
  [ $rc = 0 ] || { fail "$app: prune exit $rc"; continue; }
  "$OK" inspect $app.pruned | head -n 20
  ./$app.pruned >$app.pruned.out 2>&1; echo "$app exit $?" >>$app.pruned.out
  echo "-- before:"; cat $app.out; echo "-- after:"; cat $app.pruned.out
  if grep -q "a: sum 992" $app.out && grep -q "^b: " $app.out && ! grep -q "^b: ran" $app.out &&
    cmp -s $app.out $app.pruned.out && grep -qi "empt" $app.prune; then
    pass "$app: pruned to sm_90 with a fatbin emptied; same output ($(grep '^b:' $app.out))"
  else
    fail "$app: outputs or prune report differ from what is expected"
  fi
done

step "2. cuSPARSE SpMV on a pruned libcusparse"
nvcc -O2 "$HERE/spmv.cu" -o spmv -lcusparse || fail "building spmv"
if [ -x spmv ]; then
  lib=$(ldd ./spmv | awk '/libcusparse/ {print $3; exit}')
  real=$(readlink -f "$lib"); soname=$(basename "$lib")
  echo "libcusparse: $lib -> $real ($(stat -c %s "$real") bytes)"
  mkdir -p sm90 sm80
  timed prune "$OK" prune --keep sm_90 -o sm90/$soname "$real" 2>&1 | tail -n 8
  "$OK" prune --keep sm_80 --ptx none -o sm80/$soname "$real" >/dev/null 2>&1 || echo "(sm_80 prune: exit $?)"
  ls -l sm90/$soname sm80/$soname 2>&1
  ./spmv >spmv.orig 2>&1; echo "exit $?" >>spmv.orig
  LD_LIBRARY_PATH=$W/sm90 ./spmv >spmv.sm90 2>&1; echo "exit $?" >>spmv.sm90
  LD_LIBRARY_PATH=$W/sm80 ./spmv >spmv.sm80 2>&1; echo "exit $?" >>spmv.sm80
  for f in spmv.orig spmv.sm90 spmv.sm80; do echo "-- $f"; cat $f; done
  if grep -q "loaded: $W/sm90/" spmv.sm90 && diff <(grep -v loaded: spmv.orig) <(grep -v loaded: spmv.sm90) >/dev/null &&
    grep -q "exit 0" spmv.sm90 && grep -q "checksum" spmv.sm90; then
    pass "SpMV on libcusparse pruned to sm_90: same checksums as the shipped library"
  else
    fail "SpMV on the sm_90 libcusparse"
  fi
  if grep -q "exit 0" spmv.sm80 && grep -q "loaded: $W/sm80/" spmv.sm80; then
    fail "the sm_80-only libcusparse ran on this GPU: the pruned code is not what ran"
  else
    pass "the sm_80-only libcusparse (no PTX) cannot run SpMV here ($(grep -m1 -v loaded: spmv.sm80))"
  fi
fi

step "3. the whole venv pruned to sm_90"
COPY=$VENV-pruned
rm -rf "$COPY"
if ! cp -al "$VENV" "$COPY" 2>/dev/null; then
  rm -rf "$COPY"; COPY=$W/venv-pruned
  echo "hard links across file systems failed; full copy to $COPY"
  cp -a "$VENV" "$COPY"
fi
probe=$(find "$VENV" -name 'libtorch_cuda.so' | head -n 1)
before=$(md5sum <"$probe")
timed "venv prune" timeout 200 "$OK" prune --keep sm_90 --in-place "$COPY" >venv.prune 2>venv.prune.err
echo "prune exit $?"
tail -n 25 venv.prune; tail -n 5 venv.prune.err
[ "$(md5sum <"$probe")" = "$before" ] && pass "the original venv's libtorch_cuda.so is untouched" ||
  fail "the original venv's libtorch_cuda.so changed"
cp venv.prune venv.prune.err "$OUTDIR"/ 2>/dev/null
# cuFFT keeps its FFT kernels in fatbins of its own in .ldata, which it
# loads itself and prune leaves alone; its one registered fatbin holds a
# single sm_75 cubin, which no sm_90 device loads, so the file is refused
# without --allow-empty. With it, that fatbin is emptied, and the FFTs
# below must still run.
mapfile -t empties < <(sed -n "s/^not pruned: '\(.*\)': no device image of the file would stay.*/\1/p" venv.prune)
if [ ${#empties[@]} -gt 0 ]; then
  "$OK" prune --keep sm_90 --allow-empty --in-place "${empties[@]}" | grep -E "emptied|before"
  echo "pruned with --allow-empty: exit ${PIPESTATUS[0]}"
fi
for lib in torch cupy jax; do
  timeout 100 "$VENV/bin/python3" "$HERE/workload.py" $lib >$lib.orig 2>$lib.orig.err; ro=$?
  timeout 100 "$COPY/bin/python3" "$HERE/workload.py" $lib >$lib.pruned 2>$lib.pruned.err; rp=$?
  echo "-- $lib: exit $ro (shipped) / $rp (pruned)"
  paste -d'|' <(grep -v '^#' $lib.orig) <(grep -v '^#' $lib.pruned) | awk -F'|' '{ print ($1 == $2 ? "   " : "!! ") $1 " | " $2 }'
  grep '^#' $lib.pruned | head -n 12
  tail -n 3 $lib.orig.err $lib.pruned.err
  if [ $ro = 0 ] && [ $rp = 0 ] && cmp -s <(grep -v '^#' $lib.orig) <(grep -v '^#' $lib.pruned) && grep -q "^# loaded $COPY" $lib.pruned; then
    pass "$lib: the pruned venv computes the same bytes ($(grep -vc '^#' $lib.orig) results)"
  else
    fail "$lib: exit codes, results or loaded libraries differ"
  fi
done
step "done: $fails failed"
exit $fails
