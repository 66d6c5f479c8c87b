#!/bin/bash
# Real cluster against the simulator, side by side in one go (issue 10 item 1): a local 5-node
# helios-0 cluster on aws-helios (WAN emulation and fsync on, nodes and bench client on this
# machine) and the simulator of the same setting, at 12 and 24 clients per datacenter, 30 s each.
# Run it on a quiet machine: the real cluster's latency includes every other process's load.
#
#   scripts/realvsim.sh [MERIDIAN_BINARY]        (default: meridian on PATH)
#
# Environment: CLIENTS ("12 24"), DURATION (30s), PORT (28600), DIR (/tmp/realvsim).
# Prints, per clients/DC: the mean commit latency per datacenter, real and simulated, and the
# difference (target: within 5 ms at 12, 10 ms at 24), committed transactions per second, and the
# CPU per committed transaction of each node (utime+stime of /proc/PID/stat).
set -u
M=${1:-meridian}
CLIENTS=${CLIENTS:-12 24}
DURATION=${DURATION:-30s}
PORT=${PORT:-28600}
DIR=${DIR:-/tmp/realvsim}
HZ=$(getconf CLK_TCK)
rm -rf "$DIR"; mkdir -p "$DIR"
C="$DIR/cluster"
"$M" cluster up --dir "$C" --topology aws-helios --protocol helios-0 --base-port "$PORT" > "$DIR/up.txt" 2>&1 ||
  { cat "$DIR/up.txt"; exit 1; }
trap '"$M" cluster down --dir "$C" > /dev/null 2>&1' EXIT
ticks() { for n in V O C I S; do awk '{print $14+$15}' "/proc/$(cat "$C/pids/$n.pid")/stat"; done | tr '\n' ' '; }
# means FILE: "DC mean" per datacenter line of a bench table, then "txn/s N"
means() { awk '$1 ~ /^[VOCIS]$/ && NF >= 6 {print $1, $2} $1 == "avg/total" {print "txn/s", $4}' "$1"; }
sleep 2
for c in $CLIENTS; do
  echo "== $c clients/DC, $(uptime)"
  # the simulator first, alone (virtual time: its figures do not depend on the load)
  "$M" bench --protocols helios-0 --duration "$DURATION" --clients-per-dc "$c" > "$DIR/sim-$c.txt" 2>&1
  before=$(ticks)
  "$M" bench --cluster "$C/cluster.yaml" --duration "$DURATION" --clients-per-dc "$c" > "$DIR/real-$c.txt" 2>&1
  after=$(ticks)
  committed=$(grep -o 'ok: [0-9]* committed' "$DIR/real-$c.txt" | grep -o '[0-9]*')
  awk 'NR == FNR { sim[$1] = $2; next }
    FNR == 1 { printf "%-6s %9s %9s %9s\n", "DC", "real ms", "sim ms", "diff ms" }
    $1 != "txn/s" { printf "%-6s %9.1f %9.1f %+9.1f\n", $1, $2, sim[$1], $2-sim[$1]; if ($2-sim[$1] > worst) worst = $2-sim[$1] }
    $1 == "txn/s" { tx = sprintf("committed txn/s (measured window): real %s, simulator %s", $2, sim["txn/s"]) }
    END { print tx; printf "largest difference: %+.1f ms\n", worst }' <(means "$DIR/sim-$c.txt") <(means "$DIR/real-$c.txt")
  read -r -a b <<< "$before"; read -r -a a <<< "$after"
  printf "node CPU us per commit V/O/C/I/S (%s committed, whole bench):" "$committed"
  for i in 0 1 2 3 4; do printf " %d" $(( (a[i] - b[i]) * 1000000 / HZ / committed )); done
  echo
done
