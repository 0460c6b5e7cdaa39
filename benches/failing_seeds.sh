#!/usr/bin/env bash
# What a failing seed costs: seed 0 of each shipped scenario against each
# mutant, with runs ending once their verdict is certain
# (`run.end_when_certain`, the default) and, side by side in the same
# minute, with the rule off (a copy of the scenario with
# `end_when_certain = false`: every run to its budget, as before the rule).
# The reference's passing seed 0 of each scenario is the yardstick.
#
#   benches/failing_seeds.sh [SCENARIO...]     default: every scenarios/*.toml
#   CRASHSIM=target/release/crashsim OFF=0 benches/failing_seeds.sh smoke
#
# OFF=0 skips the runs with the rule off (they take minutes: a stuck seed
# runs to run.ticks_max). Prints a Markdown table: wall seconds and steps,
# and the ratio of the failing seed's wall time to the passing one's.
set -euo pipefail
cd "$(dirname "$0")/.."

CRASHSIM=${CRASHSIM:-target/release/crashsim}
OFF=${OFF:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ $# -eq 0 ]]; then
  set -- $(ls scenarios/*.toml | xargs -n1 basename | sed 's/\.toml$//')
fi
mutants=$("$CRASHSIM" list 2>/dev/null | awk '/^mutants/ {on=1; next} on && /^$/ {exit} on {print $1}')

# One run: prints "verdict seconds steps" (verdict: pass, fail, or error).
run() {
  local scenario=$1 mutant=$2 start end out code
  local args=(run "$scenario" --seed 0 --no-report)
  [[ -n $mutant ]] && args+=(--mutant "$mutant")
  start=$(date +%s.%N)
  set +e
  out=$("$CRASHSIM" "${args[@]}" 2>&1)
  code=$?
  set -e
  end=$(date +%s.%N)
  local steps
  steps=$(grep -o '[0-9.]*k\? steps/seed' <<<"$out" | head -1 | cut -d' ' -f1)
  case $code in
    0) echo "pass $(echo "$end - $start" | bc) ${steps:-?}" ;;
    1) echo "fail $(echo "$end - $start" | bc) ${steps:-?}" ;;
    *) echo "error - -" ;;
  esac
}

echo "| scenario | mutant | rule on: s (steps) | rule off: s (steps) | on / passing seed |"
echo "|---|---|---:|---:|---:|"
for scenario in "$@"; do
  file=scenarios/$scenario.toml
  off=$work/$scenario.toml
  # The same scenario with the rule off: its [run] table gains the key.
  awk '{print} /^\[run\]/ {print "end_when_certain = false"}' "$file" >"$off"
  read -r _ passing passing_steps < <(run "$file" "")
  echo "| $scenario | (reference, passing) | $passing ($passing_steps) | | 1.0 |"
  for mutant in $mutants; do
    read -r verdict on on_steps < <(run "$file" "$mutant")
    [[ $verdict == fail ]] || continue
    off_cell=""
    if [[ $OFF == 1 ]]; then
      read -r _ off_s off_steps < <(run "$off" "$mutant")
      off_cell="$off_s ($off_steps)"
    fi
    ratio=$(echo "scale=1; $on / $passing" | bc)
    echo "| $scenario | $mutant | $on ($on_steps) | $off_cell | $ratio |"
  done
done
