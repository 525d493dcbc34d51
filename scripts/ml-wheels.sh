#!/usr/bin/env bash
# The big ML wheels pruned to one GPU, installed and run (issue #44).
#
# Run by hand, never in CI: it downloads 4.3 GB of wheels, needs about 25 GB
# of disk while it runs (two virtual environments of 8 GB each, the pruned
# wheels, the inspect reports) and takes 20 to 40 minutes on 2 CPUs.
#
#   bash scripts/ml-wheels.sh
#   RULE=sm_80 DEPS=0 bash scripts/ml-wheels.sh
#
# What it does:
#   1. downloads the wheels below (pinned: version and SHA-256) into
#      $ML_WHEELS_CACHE (default /var/cache/offload-kit/ml-wheels): torch
#      2.10.0 (the last PyPI CUDA build of torch whose dependencies are the
#      nvidia-*-cu12 wheels; CUDA 12.8), cupy-cuda12x 14.2.0,
#      jax-cuda12-plugin and jax-cuda12-pjrt 0.10.2 (the plugin's device
#      code is in both: the PJRT plugin's xla_cuda_plugin.so and the
#      plugin's own kernels), jax and jaxlib 0.10.2 (jaxlib holds no device
#      code), and every wheel they depend on, for Python 3.11 on
#      manylinux x86_64. A file that does not match its hash is an error.
#   2. prunes each of the ML wheels with `offload-kit prune --keep $RULE`
#      (default sm_90, which each of them holds), timing it with its peak
#      RSS; with DEPS=1 (the default) also the nvidia-* wheels torch pulls
#      in, whose outcome is recorded but which are installed unpruned.
#   3. checks each pruned wheel against the original, member by member
#      (scripts/ml-wheels/images.py over `offload-kit inspect --json
#      --hash` of both): the images kept are the original's, with the
#      same hashes, of the targets the report keeps; each library with
#      device code shrank, or the report says why it did not.
#   4. installs the originals in one virtual environment and the pruned ML
#      wheels, next to the same unpruned dependencies, in another (both
#      with $PYTHON, default /usr/bin/python3.11, offline, from the cache),
#      and runs scripts/ml-wheels/cpu_run.py (torch, cupy, jax) in each:
#      seeded computations on the CPU and the libraries the process mapped.
#      The outputs must be equal, and every pruned library with device code
#      must have been mapped (so it was loaded).
#   5. prints a table: wheel, bytes before and after, libraries with device
#      code shrunk / rewritten in place (with the reason) / failing a check,
#      prune time and peak RSS, and the CPU run's verdict.
#
# Environment:
#   RULE             the --keep rule (default sm_90)
#   DEPS             1: prune the nvidia-* dependency wheels too (default 1)
#   ML_WHEELS_CACHE  where the wheels are kept (default
#                    ${OFFLOAD_KIT_CACHE:-/var/cache/offload-kit}/ml-wheels)
#   WORK             scratch directory (default /var/tmp/offload-kit-ml-wheels);
#                    emptied at the start, its venvs removed at the end
#                    unless KEEP=1
#   PYTHON           the Python 3.11 that makes the venvs (/usr/bin/python3.11)
#   OFFLOAD_KIT      the binary to use (default: `cargo build --profile ci`)
#
# Exit status: 0 when every check passed and the two environments computed
# the same; 1 when anything disagrees, a prune of an ML wheel fails, or a
# download, an install or a run fails.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERE=$ROOT/scripts/ml-wheels
RULE=${RULE:-sm_90}
DEPS=${DEPS:-1}
CACHE=${ML_WHEELS_CACHE:-${OFFLOAD_KIT_CACHE:-/var/cache/offload-kit}/ml-wheels}
WORK=${WORK:-/var/tmp/offload-kit-ml-wheels}
PYTHON=${PYTHON:-/usr/bin/python3.11}
KEEP=${KEEP:-0}

log() { printf '[ml-wheels %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# file|sha256|role: ml (pruned, installed pruned), dep (pruned when DEPS=1,
# installed as it is), plain (installed as it is).
WHEELS=(
  "torch-2.10.0-3-cp311-cp311-manylinux_2_28_x86_64.whl|ac5bdcbb074384c66fa160c15b1ead77839e3fe7ed117d667249afce0acabfac|ml"
  "cupy_cuda12x-14.2.0-cp311-cp311-manylinux2014_x86_64.whl|5fe2366cc5c61a7ee4a527ce1e8951cb89092d0fb0b5830623cf114d1942c585|ml"
  "jax_cuda12_plugin-0.10.2-cp311-cp311-manylinux_2_27_x86_64.whl|76bbfece2f6effb4e8908eb8a5fbf1abbc1125de667683ec2ffba51c63dc57af|ml"
  "jax_cuda12_pjrt-0.10.2-py3-none-manylinux_2_27_x86_64.whl|806d1fd29038b6acf5a2b289dd62192abea977ee26aef60ea295b1d28a23acf8|ml"
  "jaxlib-0.10.2-cp311-cp311-manylinux_2_27_x86_64.whl|1faca3c5d4662cb4a6130a68105d68bb520764817e165d6eebfd6786c0d1f30f|ml"
  "nvidia_cublas_cu12-12.8.4.1-py3-none-manylinux_2_27_x86_64.whl|8ac4e771d5a348c551b2a426eda6193c19aa630236b418086020df5ba9667142|dep"
  "nvidia_cuda_cupti_cu12-12.8.90-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|ea0cb07ebda26bb9b29ba82cda34849e73c166c18162d3913575b0c9db9a6182|dep"
  "nvidia_cuda_nvrtc_cu12-12.8.93-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl|a7756528852ef889772a84c6cd89d41dfa74667e24cca16bb31f8f061e3e9994|dep"
  "nvidia_cuda_runtime_cu12-12.8.90-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|adade8dcbd0edf427b7204d480d6066d33902cab2a4707dcfc48a2d0fd44ab90|dep"
  "nvidia_cudnn_cu12-9.10.2.21-py3-none-manylinux_2_27_x86_64.whl|949452be657fa16687d0930933f032835951ef0892b37d2d53824d1a84dc97a8|dep"
  "nvidia_cufft_cu12-11.3.3.83-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|4d2dd21ec0b88cf61b62e6b43564355e5222e4a3fb394cac0db101f2dd0d4f74|dep"
  "nvidia_cufile_cu12-1.13.1.3-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|1d069003be650e131b21c932ec3d8969c1715379251f8d23a1860554b1cb24fc|dep"
  "nvidia_curand_cu12-10.3.9.90-py3-none-manylinux_2_27_x86_64.whl|b32331d4f4df5d6eefa0554c565b626c7216f87a06a4f56fab27c3b68a830ec9|dep"
  "nvidia_cusolver_cu12-11.7.3.90-py3-none-manylinux_2_27_x86_64.whl|4376c11ad263152bd50ea295c05370360776f8c3427b30991df774f9fb26c450|dep"
  "nvidia_cusparse_cu12-12.5.8.93-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|1ec05d76bbbd8b61b06a80e1eaf8cf4959c3d4ce8e711b65ebd0443bb0ebb13b|dep"
  "nvidia_cusparselt_cu12-0.7.1-py3-none-manylinux2014_x86_64.whl|f1bb701d6b930d5a7cea44c19ceb973311500847f81b634d802b7b539dc55623|dep"
  "nvidia_nccl_cu12-2.27.5-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|ad730cf15cb5d25fe849c6e6ca9eb5b76db16a80f13f425ac68d8e2e55624457|dep"
  "nvidia_nvjitlink_cu12-12.8.93-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl|81ff63371a7ebd6e6451970684f916be2eab07321b73c9d244dc2b4da7f73b88|dep"
  "nvidia_nvshmem_cu12-3.4.5-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|042f2500f24c021db8a06c5eec2539027d57460e1c1a762055a6554f72c369bd|dep"
  "nvidia_nvtx_cu12-12.8.90-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|5b17e2001cc0d751a5bc2c6ec6d26ad95913324a4adb86788c944f8ce9ba441f|dep"
  "triton-3.6.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl|e8e323d608e3a9bfcc2d9efcc90ceefb764a82b99dea12a86d643c72539ad5d3|plain"
  "cuda_bindings-12.9.4-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl|c912a3d9e6b6651853eed8eed96d6800d69c08e94052c292fec3f282c5a817c9|plain"
  "cuda_pathfinder-1.9.1-py3-none-any.whl|b743c132f90ad2d1e71d43fd28f31ebcde518f943e50fd44aca62b2a80d5230d|plain"
  "numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl|89cd468399cfd2504718f0ba50e410dca55a170b61a02ad92bb18c8a65186e93|plain"
  "scipy-1.17.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl|43af8d1f3bea642559019edfe64e9b11192a8978efbd1539d7bc2aaa23d92de4|plain"
  "ml_dtypes-0.6.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl|6c8e39b53e90afda8ce52859c93de4dba3e02b76d85dcf091cc469f9184c6dae|plain"
  "opt_einsum-3.4.0-py3-none-any.whl|69bb92469f86a1565195ece4ac0323943e83477171b91d24c35afe028a90d7cd|plain"
  "sympy-1.14.0-py3-none-any.whl|e091cc3e99d2141a0ba2847328f5479b05d94a6635cb96148ccb3f34671bd8f5|plain"
  "mpmath-1.3.0-py3-none-any.whl|a0b2b9fe80bbcd81a6647ff13108738cfb482d481d826cc0e02f5b35e5c88d2c|plain"
  "networkx-3.6.1-py3-none-any.whl|d47fbf302e7d9cbbb9e2555a0d267983d2aa476bac30e90dfbe5669bd57f3762|plain"
  "fsspec-2026.9.0-py3-none-any.whl|8dd6e646e99ea382bd85f97a45e6b526a442d79423a7dc673f1e2756d05fcb5f|plain"
  "filelock-4.3.1-py3-none-any.whl|79e43df8e9fe509cd83a3899a7c186c8077cbbe4d200a1ed3705c2f3bb6bc487|plain"
  "jinja2-3.1.6-py3-none-any.whl|85ece4451f492d0c13c5dd7c13a64681a86afae63a5f347908daf103ce6d2f67|plain"
  "markupsafe-3.0.4-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl|6da83a088f8ef93b2d483a8232a4dbf4d69d3d8496b568a03c56becac43e1808|plain"
  "typing_extensions-4.16.0-py3-none-any.whl|481caa481374e813c1b176ada14e97f1f67a4539ce9cfeb3f350d78d6370c2e8|plain"
)
# What the venvs install (pip resolves the rest from the cache, offline).
REQUIREMENTS=(torch==2.10.0 cupy-cuda12x==14.2.0 jax==0.10.2 jaxlib==0.10.2 jax-cuda12-plugin==0.10.2 numpy==2.4.6)
# The platforms the wheels above are tagged for, newest first.
PLATFORMS=(manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64
  manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_12_x86_64 manylinux2010_x86_64 any)

[ -x "$PYTHON" ] || die "no $PYTHON (Debian's python3.11: scripts/setup.sh installs it)"
"$PYTHON" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info[:2] != (3, 11))' ||
  die "$PYTHON is not a Python 3.11 with venv and ensurepip"

# ---------------------------------------------------------------- 1. download
download() {
  mkdir -p "$CACHE"
  local missing=() f name sum role
  for f in "${WHEELS[@]}"; do
    IFS='|' read -r name sum role <<<"$f"
    if ! { [ -e "$CACHE/$name" ] && echo "$sum  $CACHE/$name" | sha256sum -c --status; }; then
      missing+=("$name")
    fi
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "downloading ${#missing[@]} wheel(s) into $CACHE"
    local work p plat=()
    for p in "${PLATFORMS[@]}"; do plat+=(--platform "$p"); done
    work=$(mktemp -d "$CACHE/.partial.XXXXXX")
    python3 -m pip download --quiet --progress-bar off --only-binary=:all: \
      --python-version 3.11 "${plat[@]}" -d "$work" "${REQUIREMENTS[@]}" >&2 ||
      { rm -rf "$work"; die "pip download failed"; }
    for name in "${missing[@]}"; do
      [ -e "$work/$name" ] || { rm -rf "$work"; die "pip did not download $name"; }
    done
    for f in "${WHEELS[@]}"; do
      IFS='|' read -r name sum role <<<"$f"
      [ -e "$work/$name" ] && mv -f "$work/$name" "$CACHE/$name"
    done
    rm -rf "$work"
  fi
  for f in "${WHEELS[@]}"; do
    IFS='|' read -r name sum role <<<"$f"
    echo "$sum  $CACHE/$name" | sha256sum -c --status ||
      die "$name does not match its SHA-256 $sum"
  done
}

# ---------------------------------------------------------------- 2. prune
build() {
  if [ -n "${OFFLOAD_KIT:-}" ]; then
    OURS=$(realpath "$OFFLOAD_KIT")
  else
    log "cargo build --profile ci"
    (cd "$ROOT" && cargo build --profile ci --quiet) || die "cargo build failed"
    OURS=$ROOT/target/ci/offload-kit
  fi
  [ -x "$OURS" ] || die "no offload-kit at $OURS"
}

# timed OUT_PREFIX CMD...: runs CMD with stdout to OUT_PREFIX.out and stderr
# to OUT_PREFIX.err; writes "STATUS WALL_S PEAK_RSS_MIB" to OUT_PREFIX.time
# (the peak RSS of the command, from getrusage, as bench.sh measures it).
timed() {
  local out=$1
  shift
  python3 - "$out" "$@" <<'PY'
import resource, subprocess, sys, time
out = sys.argv[1]
with open(out + ".out", "wb") as o, open(out + ".err", "wb") as e:
    t = time.monotonic()
    status = subprocess.call(sys.argv[2:], stdout=o, stderr=e)
    wall = time.monotonic() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
with open(out + ".time", "w") as f:
    f.write(f"{status} {wall:.1f} {rss:.0f}\n")
PY
}

# prune_one NAME: prunes $CACHE/NAME into $WORK/pruned/NAME, then checks it
# (images.py); the results go to $WORK/report/NAME.*.
prune_one() {
  local name=$1 r=$WORK/report/$1 status
  log "prune --keep $RULE $name"
  timed "$r.prune" "$OURS" prune --keep "$RULE" --json -o "$WORK/pruned/$name" "$CACHE/$name"
  read -r status _ <"$r.prune.time"
  if [ "$status" != 0 ]; then
    rm -f "$WORK/pruned/$name"
    return
  fi
  "$OURS" inspect --json --hash "$CACHE/$name" >"$r.orig.json"
  "$OURS" inspect --json --hash "$WORK/pruned/$name" >"$r.pruned.json"
  set +e
  python3 "$HERE/images.py" "$r.orig.json" "$r.pruned.json" "$r.prune.out" "$r.so" >"$r.check"
  echo $? >"$r.check.status"
  set -e
  rm -f "$r.orig.json" "$r.pruned.json"
  sed 's/^/  /' "$r.check" >&2
}

# ---------------------------------------------------------------- 4. install, run
# venv DIR WHEEL...: a fresh venv in DIR with REQUIREMENTS installed from the
# cache, the wheel files named taking the place of theirs.
venv() {
  local dir=$1
  shift
  rm -rf "$dir"
  "$PYTHON" -m venv "$dir"
  log "installing into $dir"
  "$dir/bin/pip" install --quiet --no-index --find-links "$CACHE" "$@" "${REQUIREMENTS[@]}" >&2 ||
    die "pip install into $dir failed"
}

run_cpu() {
  local side=$1 fw
  for fw in torch cupy jax; do
    log "cpu_run.py $fw ($side)"
    JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 "$WORK/venv-$side/bin/python" "$HERE/cpu_run.py" "$fw" \
      >"$WORK/run/$fw.$side.out" 2>"$WORK/run/$fw.$side.err" ||
      die "cpu_run.py $fw failed in the $side venv: see $WORK/run/$fw.$side.err"
  done
}

# ---------------------------------------------------------------- main
download
build
rm -rf "$WORK"
mkdir -p "$WORK/pruned" "$WORK/report" "$WORK/run"
MACHINE="$(nproc) CPU, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
log "offload-kit $("$OURS" --version | head -1); RULE=$RULE; $MACHINE"

PRUNED_ML=()
for f in "${WHEELS[@]}"; do
  IFS='|' read -r name sum role <<<"$f"
  case $role in
    ml) prune_one "$name" ;;
    dep) if [ "$DEPS" = 1 ]; then prune_one "$name"; fi ;;
  esac
  if [ "$role" = ml ] && [ -e "$WORK/pruned/$name" ]; then
    PRUNED_ML+=("$WORK/pruned/$name")
  fi
done

venv "$WORK/venv-orig"
venv "$WORK/venv-pruned" "${PRUNED_ML[@]}"
run_cpu orig
run_cpu pruned

# ---------------------------------------------------------------- 5. table
set +e
python3 - "$WORK" "$CACHE" "$DEPS" "${WHEELS[@]}" <<'PY'
import json, os, sys
work, cache, deps = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
rows, failed = [], []

def mb(n):
    return f"{n / 1e6:.1f}"

# The CPU runs: equal outputs, and the pruned libraries mapped.
runs = {}
for fw in ("torch", "cupy", "jax"):
    a = open(f"{work}/run/{fw}.orig.out").read()
    b = open(f"{work}/run/{fw}.pruned.out").read()
    runs[fw] = (a == b, {l[len("mapped "):] for l in b.splitlines() if l.startswith("mapped ")})
    if a != b:
        failed.append(f"cpu_run.py {fw}: the pruned venv printed something else")
mapped = set().union(*(m for _, m in runs.values()))
framework = {"torch": "torch", "cupy_cuda12x": "cupy", "jax_cuda12_plugin": "jax",
             "jax_cuda12_pjrt": "jax", "jaxlib": "jax"}

for spec in sys.argv[4:]:
    name, _, role = spec.split("|")
    if role == "plain" or (role == "dep" and not deps):
        continue
    r = f"{work}/report/{name}"
    status, wall, rss = open(r + ".prune.time").read().split()
    before = os.path.getsize(f"{cache}/{name}")
    dist = name.split("-")[0]
    if status != "0":
        # The JSON report says whether it was refused (a file of a kind or
        # asking for a rewrite prune does not do) or failed.
        try:
            nots = json.load(open(r + ".prune.out")).get("not_pruned", [])
        except ValueError:
            nots = []
        refused = bool(nots) and nots[0].get("refused", False)
        why = nots[0]["error"].split("': ", 1)[-1] if nots else open(r + ".prune.err").read().strip()
        why = ("refused: " if refused else "FAILED: ") + why
        rows.append((name, mb(before), "-", "-", why, wall, rss, "-"))
        # A dependency's refusal is an outcome to record; a failure, or an
        # ML wheel not pruned, is not.
        if role == "ml" or not refused:
            failed.append(f"prune {name}: exit {status}: {why}")
        continue
    after = os.path.getsize(f"{work}/pruned/{name}")
    check = open(r + ".check").read().splitlines()
    summary = dict(kv.split("=") for kv in check[-1].split())
    reasons = sorted({l.split("in place: ", 1)[1] for l in check if "in place: " in l})
    libs = f"{summary['shrunk']}/{summary['members']} shrunk" if int(summary["members"]) else "no device code"
    if int(summary["in_place"]):
        libs += f", {summary['in_place']} in place ({'; '.join(reasons)})"
    if int(summary["other"]):
        libs += f", {summary['other']} other"
    if open(r + ".check.status").read().strip() != "0":
        failed.append(f"{name}: " + "; ".join(l.strip() for l in check if "CHECK FAILED" in l))
        libs += ", CHECKS FAILED"
    run = "-"
    if role == "ml":
        fw = framework[dist]
        sos = [l for l in open(r + ".so").read().splitlines() if l]
        unloaded = [s for s in sos if s not in mapped]
        run = ("same" if runs[fw][0] else "DIFFERENT") + f" ({fw})"
        if unloaded:
            run += f", {len(unloaded)} not loaded"
            failed.append(f"{name}: not loaded by cpu_run.py: {', '.join(unloaded)}")
    else:
        run = "not installed"
    rows.append((name, mb(before), mb(after), f"{100 * (1 - after / before):.0f} %", libs, wall, rss, run))

head = ("wheel", "MB before", "MB after", "smaller", "libraries with device code", "prune s", "peak RSS MiB", "CPU run")
print("| " + " | ".join(head) + " |")
print("|" + "|".join("---" for _ in head) + "|")
for row in rows:
    print("| " + " | ".join(row) + " |")
for f in failed:
    print("FAILED:", f)
sys.exit(1 if failed else 0)
PY
status=$?
set -e
if [ "$KEEP" != 1 ]; then
  rm -rf "$WORK/venv-orig" "$WORK/venv-pruned"
fi
exit $status
