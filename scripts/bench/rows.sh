# shellcheck shell=bash
# scripts/bench/rows.sh, sourced by scripts/bench.sh: rows: running and timing both sides of a row, its notes and failures, the TSV and the table.
# ---------------------------------------------------------------- rows
# bench_row ID LABEL BYTES LLVM_ARRAY OURS_ARRAY
#   Runs each command once, untimed, to check that it succeeds (its stderr is
#   shown if not), then times it. LLVM_ARRAY / OURS_ARRAY name bash arrays that
#   hold the commands; "" means no such command (shown as n/a).
#   Afterwards row_note TEXT / row_fail TEXT annotate the row just made.
ROW_IDS=() ROW_LABELS=() ROW_BYTES=() ROW_NOTES=() ALT_CMD=()
declare -A ROW=()
FAILURES=0

run_side() {
  local id=$1 side=$2 arrname=$3 raw
  ROW[$id.$side.med]=n/a ROW[$id.$side.peak]=n/a ROW[$id.$side.min]=n/a
  ROW[$id.$side.max]=n/a ROW[$id.$side.cpu]=n/a ROW[$id.$side.cmd]=
  if [ "$side" = ours ]; then
    ROW[$id.base.med]=n/a ROW[$id.base.cpu]=n/a ROW[$id.base.peak]=n/a
    ROW[$id.pair.wall]=n/a ROW[$id.pair.cpu]=n/a
  fi
  [ -n "$arrname" ] || return 0
  local -n cmd=$arrname
  ROW[$id.$side.cmd]="${cmd[*]}"
  raw=$W/raw/$id.$side
  # A command that changes its input in place: ${arrname}_before (a
  # shell command) sets the input up again before each run, the
  # untimed one included.
  local before=""
  if declare -p "${arrname}_before" >/dev/null 2>&1; then
    local -n before_ref="${arrname}_before"
    before=$before_ref
    sh -c "$before"
  fi
  if ! "${cmd[@]}" >"$raw.stdout" 2>"$raw.stderr"; then
    log "FAILED ($side): ${cmd[*]}"
    tail -n 20 "$raw.stderr" | sed 's/^/    /' >&2 || true
    ROW[$id.$side.med]=FAILED
    return 1
  fi
  # Paired with a baseline, LLVM's command has run once for its outputs.
  if [ -n "${BASE:-}" ] && [ "$side" = llvm ]; then
    ROW[$id.$side.med]=untimed
    return 0
  fi
  # Outputs named in the array ${arrname}_rm are deleted before each run.
  local rm_list=""
  if declare -p "${arrname}_rm" >/dev/null 2>&1; then
    local -n rm_arr="${arrname}_rm"
    rm_list="${rm_arr[*]}"
  fi
  ALT_CMD=()
  if [ -n "${BASE:-}" ]; then
    baseline_cmd "${cmd[@]}"
    # The baseline's untimed run: it works, and its pages are in memory.
    # Ours has written its outputs: they go first, as before a timed run
    # (a command that writes a new directory refuses one that exists).
    [ -z "$rm_list" ] || rm -rf $rm_list
    [ -z "$before" ] || sh -c "$before"
    "${ALT_CMD[@]}" >/dev/null 2>"$raw.base.stderr" || {
      log "the baseline fails (its figures left out): ${ALT_CMD[*]}"
      ALT_CMD=()
    }
    [ -z "$before" ] || sh -c "$before"
  fi
  time_cmd "$raw.timer" "$rm_list" "$before" "${cmd[@]}"
  if [ "$T_OK" != 1 ]; then
    log "FAILED ($side) during timed runs: ${cmd[*]} (see $raw.timer)"
    ROW[$id.$side.med]=FAILED
    return 1
  fi
  ROW[$id.$side.med]=$T_MED ROW[$id.$side.peak]=$T_PEAK ROW[$id.$side.min]=$T_MIN
  ROW[$id.$side.max]=$T_MAX ROW[$id.$side.cpu]=$T_CPU
  if [ ${#ALT_CMD[@]} -gt 0 ]; then
    # The baseline may have run last: ours again, so that the row's
    # checks read our outputs.
    [ -z "$rm_list" ] || rm -rf $rm_list
    [ -z "$before" ] || sh -c "$before"
    "${cmd[@]}" >"$raw.stdout" 2>"$raw.stderr" || {
      log "FAILED ($side) after the timed runs: ${cmd[*]}"
      ROW[$id.$side.med]=FAILED
      return 1
    }
  fi
  if [ "$B_OK" = 1 ]; then
    ROW[$id.base.med]=$B_MED ROW[$id.base.cpu]=$B_CPU ROW[$id.base.peak]=$B_PEAK
    ROW[$id.pair.wall]=$P_WALL ROW[$id.pair.cpu]=$P_CPU
  fi
}

bench_row() {
  # No local here may share a name with the caller's arrays (run_side reaches
  # them through a nameref), hence the row_ prefixes.
  local row_id=$1 row_label=$2 row_bytes=$3 row_llvm=$4 row_ours=$5 row_ok=1
  log "$row_label"
  ROW_IDS+=("$row_id") ROW_LABELS+=("$row_label") ROW_BYTES+=("$row_bytes") ROW_NOTES+=("")
  ROW[$row_id.load1]=$(cut -d' ' -f1 /proc/loadavg)
  run_side "$row_id" llvm "$row_llvm" || row_ok=0
  run_side "$row_id" ours "$row_ours" || row_ok=0
  if [ $row_ok = 0 ]; then
    FAILURES=$((FAILURES + 1))
    row_note "command failed"
  fi
  log "  LLVM ${ROW[$row_id.llvm.med]}, ours ${ROW[$row_id.ours.med]} (median wall s)"
  write_tsv
}

# ran SIDE: the command of that side (llvm|ours) in the last row succeeded, so
# its outputs are worth checking
ran() {
  local v=${ROW[${ROW_IDS[-1]}.$1.med]}
  [ "$v" != FAILED ] && [ "$v" != n/a ]
}

# timed SIDE: it ran and was timed (LLVM's side is not, paired with a
# BASELINE), so the row's goals can be judged
timed() {
  ran "$1" && [ "${ROW[${ROW_IDS[-1]}.$1.med]}" != untimed ]
}

row_note() {
  local i=$((${#ROW_IDS[@]} - 1))
  ROW_NOTES[i]=${ROW_NOTES[i]:+${ROW_NOTES[i]}; }$1
  write_tsv
}
row_fail() {
  FAILURES=$((FAILURES + 1))
  log "CHECK FAILED: $1"
  row_note "FAIL: $1"
}

# same_file A B -> 0 if identical; on a difference prints cmp's description
same_file() {
  local out
  out=$(cmp "$1" "$2" 2>&1) && return 0
  echo "${out:-differ}"
  return 1
}

speedup() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2fx", a / b; else print "n/a" }'; }
mib() { awk -v m="$1" 'BEGIN { if (m ~ /^[0-9.]+$/) printf "%.1f", m; else print m }'; }
mbps() { awk -v n="$1" -v t="$2" 'BEGIN { if (n + 0 > 0 && t + 0 > 0) printf "%.0f", n / 1e6 / t; else print "n/a" }'; }

write_tsv() {
  local i id
  {
    printf 'id\trow\tbytes\truns\tllvm_wall_med\tours_wall_med\tspeedup\tllvm_peak_MiB\tours_peak_MiB\t'
    printf 'llvm_wall_min\tllvm_wall_max\tours_wall_min\tours_wall_max\tllvm_cpu_med\tours_cpu_med\tours_MBps\tload1\tnote\tllvm_cmd\tours_cmd\t'
    printf 'base_wall_med\tbase_cpu_med\tbase_peak_MiB\tpair_wall_ratio\tpair_cpu_ratio\n'
    for i in "${!ROW_IDS[@]}"; do
      id=${ROW_IDS[i]}
      printf '%s\t' "$id" "${ROW_LABELS[i]}" "${ROW_BYTES[i]}" "$RUNS" \
        "${ROW[$id.llvm.med]}" "${ROW[$id.ours.med]}" "$(speedup "${ROW[$id.llvm.med]}" "${ROW[$id.ours.med]}")" \
        "${ROW[$id.llvm.peak]}" "${ROW[$id.ours.peak]}" \
        "${ROW[$id.llvm.min]}" "${ROW[$id.llvm.max]}" "${ROW[$id.ours.min]}" "${ROW[$id.ours.max]}" \
        "${ROW[$id.llvm.cpu]}" "${ROW[$id.ours.cpu]}" "$(mbps "${ROW_BYTES[i]}" "${ROW[$id.ours.med]}")" \
        "${ROW[$id.load1]}" "${ROW_NOTES[i]}" "${ROW[$id.llvm.cmd]//$'\n'/ }"
      printf '%s\t' "${ROW[$id.ours.cmd]//$'\n'/ }" "${ROW[$id.base.med]}" "${ROW[$id.base.cpu]}" \
        "${ROW[$id.base.peak]}" "${ROW[$id.pair.wall]}"
      printf '%s\n' "${ROW[$id.pair.cpu]}"
    done
  } >"$TSV"
}

print_table() {
  local i id w=3 label
  for label in "${ROW_LABELS[@]}"; do [ ${#label} -gt "$w" ] && w=${#label}; done
  echo
  echo "offload-kit vs LLVM $LLVM_VERSION: median wall of $RUNS run(s), whole process; peak = median peak RSS"
  local maxload
  maxload=$(for id in "${ROW_IDS[@]}"; do echo "${ROW[$id.load1]}"; done | sort -g | tail -1)
  if awk -v l="${maxload:-0}" 'BEGIN { exit !(l > 1.5) }'; then
    echo "WARNING: load average reached $maxload before a row: other processes shared the $(nproc) CPUs, so times are inflated and noisy"
  fi
  echo "machine: $(nproc) CPU, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(uname -r); offload-kit $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo '?')"
  printf "%-${w}s %9s %9s %9s %9s %10s %10s  %s\n" row "MiB" "LLVM s" "ours s" "speed-up" "LLVM MiB" "ours MiB" note
  for i in "${!ROW_IDS[@]}"; do
    id=${ROW_IDS[i]}
    printf "%-${w}s %9s %9s %9s %9s %10s %10s  %s\n" "${ROW_LABELS[i]}" \
      "$(awk -v b="${ROW_BYTES[i]}" 'BEGIN { if (b > 0) printf "%.1f", b / 1048576; else print "-" }')" \
      "${ROW[$id.llvm.med]}" "${ROW[$id.ours.med]}" "$(speedup "${ROW[$id.llvm.med]}" "${ROW[$id.ours.med]}")" \
      "$(mib "${ROW[$id.llvm.peak]}")" "$(mib "${ROW[$id.ours.peak]}")" "${ROW_NOTES[i]}"
  done
  echo
}
