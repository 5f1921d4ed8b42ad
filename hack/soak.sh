#!/usr/bin/env bash
# Race hunt (`make soak`): every integration test binary of the controllers, the manager and
# the informer, run again and again with several copies of the same binary at once and CPU hogs
# beside them, as a loaded CI machine or a busy node runs them. Each failing test is printed
# with how many of its runs failed, and the logs of the failing runs are kept; the script exits
# non-zero on any failure, so a clean run is a claim that can be checked.
#
#   hack/soak.sh [--rounds N] [--copies C] [--hogs H] [--timeout S]
#                [--packages "P ..."] [--binaries REGEX] [--out DIR]
#
#   --rounds N     rounds over every binary (default 5: about 20 minutes on 2 cores, a round
#                  of the 30 binaries taking about 4 minutes with two copies and two hogs)
#   --copies C     copies of a binary running at once (default 2)
#   --hogs H       busy-loop processes beside them for the whole run (default: the core count)
#   --timeout S    a copy still running after S seconds is killed and counts as failed
#                  (default 600: every test waits far less for what it expects)
#   --packages     the packages whose tests/ binaries run (default: the controllers, the
#                  manager, the manager's binary, the toolkit and the informer)
#   --binaries     only the binaries whose `package/name` matches REGEX (grep -E)
#   --out DIR      where the logs of failing runs go (default target/soak)
#
# The tests build in the dev profile, as `make test` builds them. Rounds go over every binary
# before the next round starts, so a run cut short has covered the binaries evenly.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=5
copies=2
hogs=$(nproc)
timeout_s=600
packages="replicaset deployment statefulset daemonset job manager kube-controller-manager controller-toolkit informer"
binaries=""
out=target/soak

usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --copies) copies=$2; shift 2 ;;
    --hogs) hogs=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --packages) packages=$2; shift 2 ;;
    --binaries) binaries=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "soak: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
for number in "$rounds" "$copies" "$hogs" "$timeout_s"; do
  [[ "$number" =~ ^[0-9]+$ ]] || { echo "soak: not a number: $number" >&2; exit 2; }
done
(( rounds > 0 && copies > 0 )) || { echo "soak: --rounds and --copies must be positive" >&2; exit 2; }
# Each copy runs in its package's directory, so the logs go by absolute path.
out=$(realpath -m "$out")

# The test binaries: `package/name<TAB>package directory<TAB>path`, from cargo's build messages.
# The whole workspace builds, as `make test` builds it: selecting packages would unify their
# dependencies' features otherwise and rebuild them.
echo "soak: building the integration tests of: $packages"
list=$(cargo test --no-run --workspace --tests --message-format=json |
  python3 -c '
import json, sys
wanted = set(sys.argv[1].split())
for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    target = message.get("target") or {}
    if message.get("reason") == "compiler-artifact" and target.get("kind") == ["test"] and message.get("executable"):
        # `path+file:///dir/name#version` or `path+file:///dir#name@version`
        source, _, fragment = message["package_id"].partition("#")
        package = fragment.split("@")[0] if "@" in fragment else source.rstrip("/").rsplit("/", 1)[-1]
        if package not in wanted:
            continue
        directory = message["manifest_path"].rsplit("/", 1)[0]
        print("\t".join([package + "/" + target["name"], directory, message["executable"]]))
' "$packages" | sort)
if [[ -n "$binaries" ]]; then
  list=$(grep -E "^[^	]*($binaries)" <<<"$list" || true)
fi
[[ -n "$list" ]] || { echo "soak: no test binary matched" >&2; exit 2; }
count=$(wc -l <<<"$list")

rm -rf "$out"
mkdir -p "$out"
hog_pids=()
stop_hogs() {
  for pid in "${hog_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap stop_hogs EXIT
for _ in $(seq 1 "$hogs"); do
  sh -c 'while :; do :; done' &
  hog_pids+=($!)
done

echo "soak: $count binaries x $rounds rounds x $copies copies at once, $hogs CPU hogs beside them"
started=$(date +%s)
# One line per failing run: `binary<TAB>test` (or `<exit N>` when no test said FAILED).
failures="$out/failures.tsv"
: >"$failures"
for round in $(seq 1 "$rounds"); do
  while IFS=$'\t' read -r name directory path; do
    slug=${name//\//-}
    pids=()
    for copy in $(seq 1 "$copies"); do
      log="$out/$slug-r$round-c$copy.log"
      # Each copy runs in its package's directory, as `cargo test` runs it.
      ( cd "$directory" && timeout --kill-after=10 "$timeout_s" "$path" >"$log" 2>&1 ) &
      pids+=($!)
    done
    for copy in $(seq 1 "$copies"); do
      log="$out/$slug-r$round-c$copy.log"
      status=0
      wait "${pids[$((copy - 1))]}" || status=$?
      if (( status == 0 )); then
        rm -f "$log"
        continue
      fi
      failed=$(sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$log" || true)
      if [[ -z "$failed" ]]; then
        (( status == 124 || status == 137 )) && failed="<timed out after ${timeout_s}s>" || failed="<exit $status>"
      fi
      while read -r test; do printf '%s\t%s\n' "$name" "$test" >>"$failures"; done <<<"$failed"
      echo "soak: round $round, $name copy $copy FAILED: $(tr '\n' ' ' <<<"$failed")(log: $log)"
    done
  done <<<"$list"
  echo "soak: round $round of $rounds done, $(( $(date +%s) - started )) s"
done

elapsed=$(( $(date +%s) - started ))
per_binary=$((rounds * copies))
echo
echo "soak: $((count * per_binary)) runs of $count binaries in $elapsed s ($rounds rounds x $copies copies, $hogs hogs)"
if [[ ! -s "$failures" ]]; then
  echo "soak: no failure"
  exit 0
fi
echo "soak: failures (test: failed runs of its binary's runs)"
sort "$failures" | uniq -c | sort -rn | while read -r times name test; do
  echo "  $name $test: $times of $per_binary"
done
echo "soak: logs of the failing runs in $out"
exit 1
