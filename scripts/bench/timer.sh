# shellcheck shell=bash
# scripts/bench/timer.sh, sourced by scripts/bench.sh: the LLVM 22 tools each group needs and their check; the timer (time_cmd).
# ---------------------------------------------------------------- LLVM 22
# shellcheck disable=SC2034 # read through ${!var} in check_llvm
NEEDS_startup="llvm-offload-binary"
# shellcheck disable=SC2034

NEEDS_offload_binary="llvm-offload-binary clang-offload-packager"
NEEDS_bundler="clang-offload-bundler"
# shellcheck disable=SC2034
NEEDS_scan="llvm-offload-binary llvm-objdump llvm-objcopy"

check_llvm() {
  local step tool v missing=()
  for step in $STEPS; do
    declare -F "step_$step" >/dev/null || die "unknown step '$step' (known: $(declare -F | sed -n 's/^declare -f step_//p' | tr '\n' ' '))"
    local var=NEEDS_$step
    for tool in ${!var:-}; do
      [ -x "$LLVM/$tool" ] || [[ " ${missing[*]} " == *" $tool "* ]] || missing+=("$tool")
    done
  done
  if [ ${#missing[@]} -gt 0 ]; then
    die "LLVM 22 not found: missing ${missing[*]} in $LLVM. Install LLVM 22 (Debian/Ubuntu: the llvm-22 and clang-22 packages from apt.llvm.org) or point LLVM= at its bin directory."
  fi
  v=$("$LLVM/llvm-offload-binary" --version 2>&1 || true)
  [[ $v == *"LLVM version 22."* ]] || die "$LLVM/llvm-offload-binary is not LLVM 22 (it says: $(echo "$v" | tr '\n' ' ')); set LLVM= to an LLVM 22 bin directory"
  LLVM_VERSION=$(sed -n 's/.*LLVM version \([0-9.]*\).*/\1/p' <<<"$v" | head -1)
}

# ---------------------------------------------------------------- timer
# The same idea as the shared timeit.py, inline: run the command N times (no
# shell, output discarded), wall from a monotonic clock, user/sys and peak RSS
# of the process and the children it waited for from wait4. It adds
# --remove PATH: delete PATH (untimed) before each run, so a command that
# writes PATH does not pay for the kernel freeing the previous run's output
# (1.2 s for a 1 GiB file here, the same for both tools).
TIMER=$W/timeit.py
{
  cat >"$TIMER" <<'PY'
import argparse, os, shutil, statistics, subprocess, time
ap = argparse.ArgumentParser()
ap.add_argument('-n', type=int, default=5)
ap.add_argument('--warmup', type=int, default=1)
ap.add_argument('--timeout', type=float, default=900)
ap.add_argument('--remove', action='append', default=[])
ap.add_argument('--before', default=None)
ap.add_argument('cmd', nargs=argparse.REMAINDER)
a = ap.parse_args()
cmd = a.cmd[1:] if a.cmd[:1] == ['--'] else a.cmd
# `A... ::alt:: B...`: two commands timed in turn, A B then B A, run by run.
cmds = {'A': cmd}
if '::alt::' in cmd:
    i = cmd.index('::alt::')
    cmds = {'A': cmd[:i], 'B': cmd[i + 1:]}
stop = time.monotonic() + a.timeout
rows = {k: [] for k in cmds}
codes = {k: [] for k in cmds}
def once(c):
    for path in a.remove:
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        except FileNotFoundError:
            pass
    if a.before is not None:
        subprocess.run(['sh', '-c', a.before], check=True, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL)
    t0 = time.monotonic()
    p = subprocess.Popen(c, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    return (wall, ru.ru_utime, ru.ru_stime, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024), status
for i in range(a.warmup + a.n):
    if time.monotonic() > stop:
        break
    order = sorted(cmds) if i % 2 == 0 else sorted(cmds, reverse=True)
    for k in order:
        row, status = once(cmds[k])
        if i >= a.warmup:
            rows[k].append(row)
            codes[k].append(os.waitstatus_to_exitcode(status))
for k in cmds:
    print(f'runs counted: {k} {len(rows[k])}')
    last = codes[k][-1] if codes[k] else '?'
    print(f'{k} exit {last} ({codes[k].count(last)} of {len(rows[k])})')
    for j, name in ((1, 'user s'), (2, 'sys s'), (3, 'cpu s'), (0, 'wall s'), (4, 'peak MiB')):
        v = [r[j] for r in rows[k]] or [float('nan')]
        print(f'{k} {name:<10} {min(v):10.4f} {statistics.median(v):10.4f} {max(v):10.4f}')
if 'B' in cmds:
    # Each run's A against the B beside it: what the load of the moment
    # does to both cancels out.
    for j, name in ((3, 'cpu'), (0, 'wall')):
        r = [x[j] / y[j] for x, y in zip(rows['A'], rows['B']) if y[j] > 0] or [float('nan')]
        print(f'A/B {name:<8} {min(r):10.4f} {statistics.median(r):10.4f} {max(r):10.4f}')
    for k in cmds:
        print(f'{k} each wall s ' + ' '.join(f'{x[0]:.4f}' for x in rows[k]))
PY
}

# time_cmd RAWFILE REMOVE BEFORE CMD... -> T_OK T_MIN T_MED T_MAX T_CPU T_PEAK
#   REMOVE: space-separated paths deleted before each run ("" for none)
#   BEFORE: a shell command run (untimed) before each run ("" for none)
#   With the array ALT_CMD set, it is timed too, alternating with CMD run by
#   run: -> B_OK B_MED B_CPU B_PEAK, and P_WALL P_CPU (the medians of each
#   run's CMD/ALT_CMD ratio).
time_cmd() {
  local raw=$1 remove=$2 before=$3 p; shift 3
  local rm_args=() alt=()
  for p in $remove; do rm_args+=(--remove "$p"); done
  [ -z "$before" ] || rm_args+=(--before "$before")
  [ ${#ALT_CMD[@]} -eq 0 ] || alt=(::alt:: "${ALT_CMD[@]}")
  T_OK=0 T_MIN=nan T_MED=nan T_MAX=nan T_CPU=nan T_PEAK=nan
  B_OK=0 B_MED=n/a B_CPU=n/a B_PEAK=n/a P_WALL=n/a P_CPU=n/a
  python3 "$TIMER" -n "$RUNS" --warmup 0 "${rm_args[@]}" -- "$@" "${alt[@]}" >"$raw" 2>&1 || return 0
  read -r T_MIN T_MED T_MAX < <(awk '/^A wall s/ {print $4, $5, $6}' "$raw") || true
  read -r T_CPU < <(awk '/^A cpu s/ {print $5}' "$raw") || true
  read -r T_PEAK < <(awk '/^A peak MiB/ {print $5}' "$raw") || true
  grep -q "^A exit 0 ($RUNS of $RUNS)" "$raw" && T_OK=1
  if [ ${#alt[@]} -gt 0 ]; then
    read -r B_MED < <(awk '/^B wall s/ {print $5}' "$raw") || true
    read -r B_CPU < <(awk '/^B cpu s/ {print $5}' "$raw") || true
    read -r B_PEAK < <(awk '/^B peak MiB/ {print $5}' "$raw") || true
    read -r P_WALL < <(awk '/^A\/B wall/ {print $4}' "$raw") || true
    read -r P_CPU < <(awk '/^A\/B cpu/ {print $4}' "$raw") || true
    grep -q "^B exit 0 ($RUNS of $RUNS)" "$raw" && B_OK=1
  fi
  return 0
}

# baseline_cmd CMD...: CMD with the baseline binary for ours (and its links
# for our links) -> ALT_CMD
baseline_cmd() {
  local a
  ALT_CMD=()
  for a in "$@"; do
    case $a in
      "$OURS") ALT_CMD+=("$BASE") ;;
      "$LINKS"/*) ALT_CMD+=("$BASE_LINKS/${a#"$LINKS"/}") ;;
      *) ALT_CMD+=("$a") ;;
    esac
  done
}
