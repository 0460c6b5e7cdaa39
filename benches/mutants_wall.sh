#!/usr/bin/env bash
# What the ending rule saves in the detection table: `crashsim mutants`
# over every shipped scenario with runs ending once their verdict is
# certain (the default), then, in the same minute, over copies of the
# scenarios with `end_when_certain = false` (every run to its budget, as
# before the rule). Prints both wall times, their ratio, and whether the
# two tables caught the same (mutant, scenario) pairs with the same first
# invariant.
#
#   benches/mutants_wall.sh                      --seeds 200 --ranges 3
#   SEEDS=20 RANGES=1 JOBS=2 benches/mutants_wall.sh
#   CRASHSIM=target/release/crashsim benches/mutants_wall.sh
#   CRASHSIM_OFF=/tmp/old/crashsim benches/mutants_wall.sh
#
# CRASHSIM_OFF runs the rule-off table with another build (default: the
# same one): today's rule against an older build's runs to their budget.
set -euo pipefail
cd "$(dirname "$0")/.."

CRASHSIM=${CRASHSIM:-target/release/crashsim}
CRASHSIM_OFF=${CRASHSIM_OFF:-$CRASHSIM}
SEEDS=${SEEDS:-200}
RANGES=${RANGES:-3}
JOBS=${JOBS:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/off"

on=() off=()
for file in scenarios/*.toml; do
  # The table runs mutants of the reference store only.
  grep -q '^store = ' "$file" && ! grep -q '^store = "reference"' "$file" && continue
  on+=(--scenario "$file")
  copy=$work/off/$(basename "$file")
  awk '{print} /^\[run\]/ {print "end_when_certain = false"}' "$file" >"$copy"
  off+=(--scenario "$copy")
done

# One table: prints "wall cpu" seconds (cpu: user + system of crashsim
# and its children, which a machine shared with other work disturbs far
# less than wall time); its JSON lines go to $1.
table() {
  local code=0 binary=$CRASHSIM
  [[ $1 == */off.json ]] && binary=$CRASHSIM_OFF
  /usr/bin/time -f "%e %U %S" -o "$work/time" \
    "$binary" mutants "${@:2}" --seeds "$SEEDS" --ranges "$RANGES" --jobs "$JOBS" \
    --no-report --format json >"$1" || code=$?
  # 0: every mutant caught, 1: some not; anything else is a broken table.
  [[ $code -le 1 ]] || { echo "mutants exited $code" >&2; exit 2; }
  # (time writes "Command exited with non-zero status 1" first when it did.)
  tail -1 "$work/time" | awk '{printf "%s %.1f\n", $1, $2 + $3}'
}

echo "mutants --seeds $SEEDS --ranges $RANGES --jobs $JOBS, $((${#on[@]} / 2)) scenarios"
echo "rule on: $CRASHSIM; rule off: $CRASHSIM_OFF"
read -r on_wall on_cpu < <(table "$work/on.json" "${on[@]}")
echo "rule on:  ${on_wall} s wall, ${on_cpu} s cpu"
read -r off_wall off_cpu < <(table "$work/off.json" "${off[@]}")
echo "rule off: ${off_wall} s wall, ${off_cpu} s cpu"
echo "off / on: $(echo "scale=2; $off_wall / $on_wall" | bc) wall, $(echo "scale=2; $off_cpu / $on_cpu" | bc) cpu"

python3 - "$work/on.json" "$work/off.json" <<'PY'
import json, sys

def pairs(path):
    caught = {}
    for line in open(path):
        row = json.loads(line)
        for s in row.get("scenarios", []):
            if any(seeds is not None for seeds in s["seeds_to_detection"]):
                caught[(row["mutant"], s["scenario"])] = tuple(sorted(s["invariants"]))
    return caught

def firsts(path):
    return {row["mutant"]: row.get("first_invariants") for row in map(json.loads, open(path))}

on, off = pairs(sys.argv[1]), pairs(sys.argv[2])
print(f"caught pairs: rule on {len(on)}, rule off {len(off)}")
print(f"caught by one rule only: {sorted(set(on) ^ set(off)) or 'none'}")
# A run that ends early does not reach what followed its finding (an I10
# after an I3): the invariants each pair showed differ, the first may not.
fewer = sum(on[key] != off[key] for key in set(on) & set(off))
print(f"pairs whose later invariants the early end left out: {fewer}")
first_on, first_off = firsts(sys.argv[1]), firsts(sys.argv[2])
for mutant in sorted(first_on):
    if first_on[mutant] != first_off.get(mutant):
        print(f"  first invariant differs: {mutant}: on {first_on[mutant]}, off {first_off.get(mutant)}")
PY
