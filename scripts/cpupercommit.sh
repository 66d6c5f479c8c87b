#!/bin/bash
# CPU per committed transaction of a local helios-0 cluster on aws-helios (WAN emulation and
# fsync on), two builds side by side: each run starts one cluster per build at the same time
# (different base ports), benches both at once and reads every node's CPU (utime+stime of
# /proc/PID/stat) before and after, and the bench client's CPU (/usr/bin/time).
#
#   scripts/cpupercommit.sh BASE_BINARY NEW_BINARY [RUNS] [CLIENTS_PER_DC...] 
#   e.g. scripts/cpupercommit.sh /tmp/meridian-main /tmp/meridian-new 3 12 24
#
# Environment: DURATION (30s), IDLE_S (10: seconds of the idle cluster's CPU measured before each
# bench), OUT (/tmp/cpupercommit), PORT_BASE (28900; the new build uses PORT_BASE+200). Prints
# one line per build and run, then the totals per build and clients/DC: CPU µs per commit per
# node (node CPU summed over the runs ÷ commits summed over the runs), the same net of the idle
# cluster's CPU per second over the bench's wall time (mean of the nodes), the bench client's CPU
# per commit, committed/s, the idle CPU per node, and the new ÷ base ratios.
set -u
BASE=$1 NEW=$2 RUNS=${3:-3}
shift 3 2>/dev/null || shift $#
CLIENTS=${*:-12 24}
DURATION=${DURATION:-30s}
OUT=${OUT:-/tmp/cpupercommit}
PORT_BASE=${PORT_BASE:-28900}
IDLE_S=${IDLE_S:-10}
HZ=$(getconf CLK_TCK)
mkdir -p "$OUT"

# one BIN TAG CLIENTS PORT: one run of one build; appends "TAG C committed secs ticks... client_s" to $OUT/runs.txt
one() {
  local bin=$1 tag=$2 c=$3 port=$4 dir=$OUT/c-$2
  rm -rf "$dir"
  "$bin" cluster up --dir "$dir" --topology aws-helios --protocol helios-0 --base-port "$port" > "$dir.up" 2>&1 ||
    { echo "cluster up failed: $dir.up" >&2; return 1; }
  ticks() { for n in V O C I S; do awk '{print $14+$15}' "/proc/$(cat "$dir/pids/$n.pid")/stat"; done | tr '\n' ' '; }
  sleep 2
  local idle0 idle1 before after t0 t1
  idle0=$(ticks); sleep "$IDLE_S"; idle1=$(ticks)   # the idle cluster's CPU per second
  before=$(ticks); t0=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$dir.time" "$bin" bench --cluster "$dir/cluster.yaml" --duration "$DURATION" \
    --clients-per-dc "$c" > "$dir.bench" 2>&1
  after=$(ticks); t1=$(date +%s.%N)
  "$bin" cluster down --dir "$dir" > /dev/null 2>&1
  local committed txns
  committed=$(grep -o 'ok: [0-9]* committed' "$dir.bench" | grep -o '[0-9]*')
  txns=$(awk '/avg\/total/ {print $4}' "$dir.bench")
  read -r -a b <<< "$before"; read -r -a a <<< "$after"
  read -r -a i0 <<< "$idle0"; read -r -a i1 <<< "$idle1"
  local line="$tag $c ${committed:-0} ${txns:-0}" idle=0
  for i in 0 1 2 3 4; do line="$line $(( a[i] - b[i] ))"; idle=$(( idle + i1[i] - i0[i] )); done
  line="$line $(awk '{print $1+$2}' "$dir.time") $(echo "$t1 - $t0" | bc) $(echo "scale=1; $idle / 5 / $IDLE_S" | bc)"
  echo "$line load=$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$OUT/runs.txt"
  cp "$dir.bench" "$OUT/bench-$tag-$c-$(date +%H%M%S).txt"
}

: > "$OUT/runs.txt"
echo "# tag clients/DC committed txn/s ticks(V O C I S, 1/$HZ s) client_cpu_s bench_wall_s idle_ticks_per_s_per_node load" | tee "$OUT/runs.txt"
for c in $CLIENTS; do
  for r in $(seq "$RUNS"); do
    one "$BASE" base "$c" "$PORT_BASE" &
    one "$NEW" new "$c" $((PORT_BASE + 200)) &
    wait
  done
done

awk -v hz="$HZ" '
  /^#/ {next}
  { k=$1" "$2; n[k]+=$3; r[k]+=$4; runs[k]++; nt=0; for (i=0;i<5;i++) { t[k,i]+=$(5+i); nt+=$(5+i) }
    cl[k]+=$10; net[k]+=nt-5*$12*$11; idle[k]+=$12 }
  END {
    printf "%-8s %9s %6s  %-26s %9s %9s %8s\n", "build c", "committed", "txn/s", "node us/commit V/O/C/I/S", "net of idle", "client", "idle ms/s"
    for (k in n) {
      s=""; for (i=0;i<5;i++) { us[k,i]=t[k,i]*1e6/hz/n[k]; s=s sprintf("%d/", us[k,i]) }
      cu[k]=cl[k]*1e6/n[k]; nu[k]=net[k]*1e6/hz/n[k]/5
      printf "%-8s %9d %6.0f  %-26s %9.0f %9.0f %8.0f\n", k, n[k], r[k]/runs[k], s, nu[k], cu[k], idle[k]/runs[k]*1000/hz
    }
    for (k in n) if (k ~ /^new/) { split(k, p, " "); b="base " p[2]; if (!(b in n)) continue
      s=""; for (i=0;i<5;i++) s=s sprintf("%.2f/", us[k,i]/us[b,i])
      printf "new/base %s/DC: node CPU per commit %s net of idle %.2f, client %.2f, commits %.2f\n", p[2], s, nu[k]/nu[b], cu[k]/cu[b], n[k]/n[b] }
  }' "$OUT/runs.txt"
