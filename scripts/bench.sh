#!/usr/bin/env bash
# Measures starpod against its targets and prints one Markdown table, the README's:
#
#   - in process: BenchmarkApply (the GPU overlay on the training pod, compiled once) against a
#     strict JSON round trip of the same pod, the two interleaved in one loop
#     (BenchmarkApplyVsJSON), with their allocations, and BenchmarkCompile;
#   - start: `starpod apply` of one pod with overlays in workers and with --isolation none,
#     ytt and `kubectl kustomize` making the same change, in turn, START_RUNS times each;
#   - end to end: `starpod apply` over N copies of the training pod (distinct names) with
#     workers (the default) and in process, in turn, against ytt (the same change as a ytt
#     overlay) and `kubectl kustomize` (as a strategic-merge patch); the peak RSS of the
#     largest process (from /usr/bin/time and, sampled every 20 ms, from /proc of every
#     process of the run: apply exits before its workers);
#   - the scheduler, for the record (no target): `starpod run --dry-run` of a role of 1,000
#     replicas (testdata/bench/app-1000.yaml) against 1,000 in-process applies, in turn.
#
# Every ratio is of measurements taken in turn, so that a change of the machine's speed touches
# both sides alike; every figure is a median. The engine's benchmarks that do not exist (any
# more) are left out of the table, as are the rows of tools that are absent. Set YTT_INSTALL=1 to
# build ytt v0.52.0 into a temporary directory when it is not on PATH.
#
# Targets: Apply ≤ 0.75× the JSON round trip, with no more allocations; compile + init ≤ 200 µs;
# a start (apply of one pod with workers) ≤ 3× ytt's; from 10,000 pods, ≥ 10× faster than ytt and
# ≥ 30× faster than kubectl kustomize; every process ≤ 32 MiB peak RSS; the time per pod flat
# (within ±25 % of the smallest size's) across SIZES, counted after the start (the wall time
# less the median start of apply of one pod).
#
# Settings (environment): SIZES (default "1000 10000 100000"), OTHERS_MAX_PODS (sizes above it
# measure starpod alone; default 10000), RUNS (runs per measurement; default 3; 5 times as many
# at 1,000 pods and below), SLOW_RUNS (runs of kubectl and ytt above 1,000 pods; default 1),
# START_RUNS (default 21), BENCHTIME (-test.benchtime; default 1s), COUNT (runs of the engine
# benchmarks; default 5), KUBECTL_MAX_PODS (sizes above it run kubectl once, stopped after
# KUBECTL_CAP, default 30, times starpod's wall time; default no limit).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

SIZES=${SIZES:-"1000 10000 100000"}
OTHERS_MAX_PODS=${OTHERS_MAX_PODS:-10000}
RUNS=${RUNS:-3}
SLOW_RUNS=${SLOW_RUNS:-1}
START_RUNS=${START_RUNS:-21}
BENCHTIME=${BENCHTIME:-1s}
COUNT=${COUNT:-5}
KUBECTL_MAX_PODS=${KUBECTL_MAX_PODS:-1000000}
KUBECTL_CAP=${KUBECTL_CAP:-30}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

timer=/usr/bin/time
if [ ! -x "$timer" ]; then
	echo "bench: /usr/bin/time is missing; install it with: apt-get install -y time" >&2
	exit 2
fi

# row MEASURED STARPOD AGAINST RATIO TARGET MET records a row of the table printed at the end.
: >"$tmp/rows"
row() {
	printf '| %s | %s | %s | %s | %s | %s |\n' "$@" >>"$tmp/rows"
}
# check EXPR VALUES... prints yes if the awk expression EXPR over v1, v2, ... holds, else no.
check() {
	local expr=$1
	shift
	awk -v v1="${1:-0}" -v v2="${2:-0}" -v v3="${3:-0}" -v v4="${4:-0}" "BEGIN { print (($expr) ? \"yes\" : \"no\") }"
}
# us NS, ms SECONDS, sec SECONDS, mib KIB and times A B print a value for the table (times:
# A over B).
us() { awk -v v="$1" 'BEGIN { printf "%.1f µs", v / 1000 }'; }
ms() { awk -v v="$1" 'BEGIN { printf "%.0f ms", v * 1000 }'; }
sec() { awk -v v="$1" 'BEGIN { printf "%.2f s", v }'; }
mib() { awk -v v="$1" 'BEGIN { printf "%.1f MiB", v / 1024 }'; }
times() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f×", a / b }'; }

# median FILE prints the median of the numbers in FILE, one a line.
median() {
	sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'
}

# --- in process -----------------------------------------------------------------------------

echo "running the engine benchmarks $COUNT times (benchtime $BENCHTIME)..." >&2
# One test binary run COUNT times, so that a change of the machine's load during the run
# touches every benchmark alike. It is built with the profile the starpod binary is built
# with (cmd/starpod/default.pgo), so that starpod's times are compared with those of the same
# code. A benchmark the engine no longer has simply matches nothing.
go test -c -pgo="$root/cmd/starpod/default.pgo" -o "$tmp/engine.test" ./engine/
: >"$tmp/bench.txt"
for ((i = 0; i < COUNT; i++)); do
	(cd engine && "$tmp/engine.test" -test.run '^$' -test.benchmem -test.benchtime "$BENCHTIME" \
		-test.bench '^Benchmark(Apply|ApplyVsJSON|JSONRoundTrip|Compile)$') >>"$tmp/bench.txt"
done

# median_bench NAME UNIT prints the median of the values of benchmark NAME in UNIT (ns/op,
# allocs/op, apply/json), or nothing if the benchmark did not run.
median_bench() {
	awk -v name="$1" -v unit="$2" '
		$1 ~ "^Benchmark" name "(-[0-9]+)?$" { for (i = 2; i < NF; i++) if ($(i+1) == unit) print $i }
	' "$tmp/bench.txt" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'
}

json_ns=$(median_bench JSONRoundTrip ns/op)
json_allocs=$(median_bench JSONRoundTrip allocs/op)
apply_ns=$(median_bench Apply ns/op)
apply_allocs=$(median_bench Apply allocs/op)
ratio=$(median_bench ApplyVsJSON apply/json)
if [ -n "$apply_ns" ] && [ -n "$json_ns" ]; then
	# The ratio is that of the two interleaved in one loop: the medians of the two benchmarks
	# apart are taken seconds apart, and the machine's speed changes in between.
	if [ -z "$ratio" ]; then ratio=$(awk -v a="$apply_ns" -v j="$json_ns" 'BEGIN { print a / j }'); fi
	row "\`Overlay.Apply\` vs a strict JSON round trip, interleaved" "$(us "$apply_ns")" "$(us "$json_ns")" \
		"$(times "$ratio" 1)" "≤ 0.75×" "$(check 'v1 <= 0.75' "$ratio")"
	row "allocations of an apply vs the JSON round trip's" "$apply_allocs" "$json_allocs" \
		"$(times "$apply_allocs" "$json_allocs")" "≤ 1×" "$(check 'v1 <= v2' "$apply_allocs" "$json_allocs")"
fi
compile_ns=$(median_bench Compile ns/op)
if [ -n "$compile_ns" ]; then
	row "\`engine.Compile\` of the overlay, its top level run" "$(us "$compile_ns")" "" "" "≤ 200 µs" "$(check 'v1 <= 200000' "$compile_ns")"
fi

# --- tools ----------------------------------------------------------------------------------

echo "building starpod..." >&2
# Static, as a release is built: without cgo, no process maps the C library (about 1.5 MiB
# less resident memory in each). With the profile cmd/starpod/default.pgo, as go build uses it.
CGO_ENABLED=0 go build -o "$tmp/starpod" ./cmd/starpod

ytt=$(command -v ytt || true)
if [ -z "$ytt" ] && [ "${YTT_INSTALL:-0}" = 1 ]; then
	echo "installing ytt v0.52.0..." >&2
	# go install ytt@v0.52.0 asks the proxy for the module's version list, which it refuses;
	# download the version and build it instead.
	if src=$(go mod download -json carvel.dev/ytt@v0.52.0 | awk -F'"' '$2 == "Dir" { print $4 }') &&
		[ -n "$src" ] && GOFLAGS=-mod=mod go build -C "$src" -o "$tmp/bin/ytt" ./cmd/ytt >&2; then
		ytt=$tmp/bin/ytt
		ytt_version="v0.52.0 (carvel.dev/ytt@v0.52.0, built by this script)"
	fi
fi
kubectl=$(command -v kubectl || true)

# The change every tool makes: select the GPU pool and tolerate its taint (the
# gpu-tolerations example).
cp examples/gpu-tolerations/overlay.star "$tmp/overlay.star"

# A strategic-merge patch replaces a list without a patch merge key, such as tolerations,
# whole: it lists the tolerations the pod has and the new one (which the training pod has
# already, so the overlay keeps the list as it is).
cat >"$tmp/patch.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: any
spec:
  nodeSelector:
    cloud.example.com/pool: gpu-a100
  tolerations:
  - key: nvidia.com/gpu
    operator: Exists
    effect: NoSchedule
  - key: cloud.google.com/gke-preemptible
    operator: Equal
    value: "true"
    effect: NoSchedule
    tolerationSeconds: 300
EOF

cat >"$tmp/ytt-overlay.yaml" <<'EOF'
#@ load("@ytt:overlay", "overlay")
#@overlay/match by=overlay.subset({"kind": "Pod"}), expects="1+"
---
spec:
  #@overlay/match missing_ok=True
  nodeSelector:
    #@overlay/match missing_ok=True
    cloud.example.com/pool: gpu-a100
  tolerations:
  #@overlay/match by=overlay.subset({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}), missing_ok=True
  - key: nvidia.com/gpu
    operator: Exists
    effect: NoSchedule
EOF

# inputs N makes $tmp/nN: N copies of the training pod (pods.yaml) and a kustomization of
# them with the patch.
inputs() {
	local dir=$tmp/n$1
	mkdir -p "$dir"
	scripts/pods.sh "$1" >"$dir/pods.yaml"
	cat >"$dir/kustomization.yaml" <<EOF
resources:
- pods.yaml
patches:
- target:
    kind: Pod
  path: patch.yaml
EOF
	cp "$tmp/patch.yaml" "$dir/patch.yaml"
}

# run_once FILE CMD... runs CMD once (output to $tmp/out.yaml) and appends "seconds kib" to
# FILE: its wall time (to the microsecond: /usr/bin/time reports hundredths) and peak RSS.
run_once() {
	local file=$1
	shift
	local start end
	start=$(date +%s%N)
	if ! "$timer" -f '%M' -o "$tmp/time1" "$@" >"$tmp/out.yaml" 2>"$tmp/err"; then
		echo "bench: $* failed:" >&2
		cat "$tmp/err" >&2
		return 1
	fi
	end=$(date +%s%N)
	echo "$(((end - start) / 1000)) $(cat "$tmp/time1")" | awk '{ printf "%.6f %d\n", $1 / 1e6, $2 }' >>"$file"
}

# summarize FILE prints "seconds kib" of the runs in FILE: the median wall time and the
# largest peak RSS.
summarize() {
	sort -g "$1" | awk '{ t[NR] = $1; if ($2 > m) m = $2 } END { print t[int((NR + 1) / 2)], m }'
}

# measure RUNS CMD... runs CMD RUNS times and prints "seconds kib" (see summarize).
measure() {
	local runs=$1
	shift
	local i
	: >"$tmp/times"
	for ((i = 0; i < runs; i++)); do
		run_once "$tmp/times" "$@" || return 1
	done
	summarize "$tmp/times"
}

# apply_once FILE APPLIES appends to FILE the ns/op of one run of BenchmarkApply over APPLIES
# applies.
apply_once() {
	(cd engine && "$tmp/engine.test" -test.run '^$' -test.bench '^BenchmarkApply$' -test.benchtime "${2}x") |
		awk '$1 ~ /^BenchmarkApply(-[0-9]+)?$/ { for (i = 2; i < NF; i++) if ($(i+1) == "ns/op") print $i }' >>"$1"
}

# tree_rss CMD... runs CMD once (output discarded) and prints two numbers in KiB: the largest
# sum of the resident memory of CMD and all its descendants at one time, and the largest peak
# of any one of them (its VmHWM), both sampled every 20 ms. A run short enough to end before a
# sample saw it is run again, three times at most.
tree_rss() {
	local try out
	for try in 1 2 3; do
		out=$(tree_rss_once "$@") || return 1
		if [ "${out%% *}" -gt 0 ]; then break; fi
	done
	echo "$out"
}

# tree_rss_once CMD... is one run of tree_rss: "0 0" if no sample saw CMD.
tree_rss_once() {
	"$@" >/dev/null 2>&1 &
	local pid=$! peak=0 one=0 cur
	while kill -0 "$pid" 2>/dev/null; do
		read -r cur hwm < <(ps -eo pid=,ppid=,rss= | awk -v root="$pid" '
			{ parent[$1] = $2; rss[$1] = $3 }
			END {
				for (p in rss) {
					for (q = p; q != "" && q != 0 && q != 1; q = parent[q]) if (q == root) {
						sum += rss[p]
						f = "/proc/" p "/status"
						while ((getline line < f) > 0) if (line ~ /^VmHWM:/) { split(line, w, " "); if (w[2] > hwm) hwm = w[2] }
						close(f)
						break
					}
				}
				print sum + 0, hwm + 0
			}')
		if [ "$cur" -gt "$peak" ]; then peak=$cur; fi
		if [ "$hwm" -gt "$one" ]; then one=$hwm; fi
		sleep 0.02
	done
	wait "$pid" || return 1
	echo "$peak $one"
}

# --- start ----------------------------------------------------------------------------------

# One pod through each tool, in turn (a rotation, so that a change of the machine's speed
# touches every tool alike), START_RUNS times: what a user waits for on a small input is
# the start of the program.
echo "measuring the start: one pod, $START_RUNS runs of each tool in turn..." >&2
inputs 1
one=$tmp/n1
: >"$tmp/start.w"
: >"$tmp/start.n"
: >"$tmp/start.y"
: >"$tmp/start.k"
for ((i = 0; i < START_RUNS; i++)); do
	run_once "$tmp/start.w" "$tmp/starpod" apply --overlay-script "$tmp/overlay.star" -f "$one/pods.yaml"
	run_once "$tmp/start.n" "$tmp/starpod" apply --isolation none --overlay-script "$tmp/overlay.star" -f "$one/pods.yaml"
	if [ -n "$ytt" ]; then run_once "$tmp/start.y" "$ytt" -f "$one/pods.yaml" -f "$tmp/ytt-overlay.yaml"; fi
	if [ -n "$kubectl" ]; then run_once "$tmp/start.k" "$kubectl" kustomize "$one"; fi
done
start_w=$(median "$tmp/start.w")
start_n=$(median "$tmp/start.n")
if [ -n "$ytt" ]; then
	start_y=$(median "$tmp/start.y")
	row "start: \`apply\` of 1 pod (workers) vs ytt" "$(ms "$start_w")" "$(ms "$start_y")" "$(times "$start_w" "$start_y")" \
		"≤ 3×" "$(check 'v1 <= 3 * v2' "$start_w" "$start_y")"
	row "start: \`apply --isolation none\` of 1 pod vs ytt" "$(ms "$start_n")" "$(ms "$start_y")" "$(times "$start_n" "$start_y")" "" ""
else
	row "start: \`apply\` of 1 pod, workers; \`--isolation none\`" "$(ms "$start_w")" "$(ms "$start_n")" "" "" ""
fi
if [ -n "$kubectl" ]; then
	start_k=$(median "$tmp/start.k")
	row "start: \`apply\` of 1 pod (workers) vs \`kubectl kustomize\`" "$(ms "$start_w")" "$(ms "$start_k")" "$(times "$start_w" "$start_k")" "" ""
fi

# --- end to end -----------------------------------------------------------------------------

# measure_pair RUNS runs the commands in the arrays cmd_a and cmd_b in turn, RUNS times each,
# and prints "seconds kib seconds kib": summarize of cmd_a's runs, then of cmd_b's. The output
# left in $tmp/out.yaml is cmd_a's.
measure_pair() {
	local runs=$1 i
	: >"$tmp/times.a"
	: >"$tmp/times.b"
	for ((i = 0; i < runs; i++)); do
		run_once "$tmp/times.b" "${cmd_b[@]}" || return 1
		run_once "$tmp/times.a" "${cmd_a[@]}" || return 1
	done
	echo "$(summarize "$tmp/times.a") $(summarize "$tmp/times.b")"
}

for n in $SIZES; do
	inputs "$n"
	dir=$tmp/n$n
	slow=$RUNS
	if [ "$n" -gt 1000 ]; then slow=$SLOW_RUNS; fi
	label=$(awk -v n="$n" 'BEGIN { s = sprintf("%d", n); while (length(s) > 3) { t = "," substr(s, length(s) - 2) t; s = substr(s, 1, length(s) - 3) } print s t }')

	echo "measuring $n pods..." >&2
	cmd_a=("$tmp/starpod" apply --overlay-script "$tmp/overlay.star" -f "$dir/pods.yaml")
	cmd_b=("$tmp/starpod" apply --isolation none --overlay-script "$tmp/overlay.star" -f "$dir/pods.yaml")
	pair_runs=$RUNS
	if [ "$n" -le 1000 ]; then pair_runs=$((RUNS * 5)); fi
	read -r s_t s_m i_t i_m < <(measure_pair "$pair_runs")
	docs=$(grep -c '^kind: Pod' "$tmp/out.yaml")
	if [ "$docs" != "$n" ]; then
		echo "bench: starpod wrote $docs pods, want $n" >&2
		exit 1
	fi
	read -r s_all s_one < <(tree_rss "${cmd_a[@]}")
	if [ "$s_one" -gt "$s_m" ]; then s_m=$s_one; fi

	if [ -n "$ytt" ] && [ "$n" -le "$OTHERS_MAX_PODS" ]; then
		read -r y_t _ < <(measure "$slow" "$ytt" -f "$dir/pods.yaml" -f "$tmp/ytt-overlay.yaml")
		want="" met=""
		if [ "$n" -ge 10000 ]; then want="≥ 10×" met=$(check 'v1 >= 10 * v2' "$y_t" "$s_t"); fi
		row "$label pods: \`apply\` (workers) vs ytt" "$(sec "$s_t")" "$(sec "$y_t")" \
			"$(awk -v y="$y_t" -v s="$s_t" 'BEGIN { printf "%.1f× faster", y / s }')" "$want" "$met"
	fi
	if [ -n "$kubectl" ] && [ "$n" -le "$OTHERS_MAX_PODS" ]; then
		want="" met=""
		if [ "$n" -ge 10000 ]; then want="≥ 30×"; fi
		if [ "$n" -le "$KUBECTL_MAX_PODS" ]; then
			read -r k_t _ < <(measure "$slow" "$kubectl" kustomize "$dir")
			if [ -n "$want" ]; then met=$(check 'v1 >= 30 * v2' "$k_t" "$s_t"); fi
			row "$label pods: \`apply\` (workers) vs \`kubectl kustomize\`" "$(sec "$s_t")" "$(sec "$k_t")" \
				"$(awk -v k="$k_t" -v s="$s_t" 'BEGIN { printf "%.1f× faster", k / s }')" "$want" "$met"
		else
			# One run, stopped at KUBECTL_CAP times starpod's time: if it is stopped, starpod
			# is faster by more than that.
			cap=$(awk -v s="$s_t" -v c="$KUBECTL_CAP" 'BEGIN { printf "%.0f", s * c + 1 }')
			echo "measuring kubectl kustomize over $n pods, stopped after $cap s..." >&2
			start=$(date +%s%N)
			if timeout "$cap" "$kubectl" kustomize "$dir" >/dev/null 2>"$tmp/err"; then
				end=$(date +%s%N)
				k_t=$(awk -v d="$((end - start))" 'BEGIN { printf "%.6f", d / 1e9 }')
				if [ -n "$want" ]; then met=$(check 'v1 >= 30 * v2' "$k_t" "$s_t"); fi
				row "$label pods: \`apply\` (workers) vs \`kubectl kustomize\`" "$(sec "$s_t")" "$(sec "$k_t")" \
					"$(awk -v k="$k_t" -v s="$s_t" 'BEGIN { printf "%.1f× faster", k / s }')" "$want" "$met"
			else
				if [ -n "$want" ]; then met=$(check 'v1 >= 30' "$KUBECTL_CAP"); fi
				row "$label pods: \`apply\` (workers) vs \`kubectl kustomize\`" "$(sec "$s_t")" "stopped at $cap s" \
					"> ${KUBECTL_CAP}× faster" "$want" "$met"
			fi
		fi
	fi
	row "$label pods: \`apply --isolation none\` vs workers" "$(sec "$i_t")" "$(sec "$s_t")" \
		"$(times "$i_t" "$s_t")" "" ""
	big=$s_m
	if [ "$i_m" -gt "$big" ]; then big=$i_m; fi
	row "$label pods: peak RSS of the largest process, workers; in process" "$(mib "$s_m")" "$(mib "$i_m")" "" "≤ 32 MiB" "$(check 'v1 <= 32 * 1024' "$big")"
	# The time per pod after the start: the wall time less the median start of apply of one
	# pod, per pod; flat within ±25 % of the smallest size's.
	per=$(awk -v t="$s_t" -v s="$start_w" -v n="$n" 'BEGIN { print (t - s) / n }')
	if [ -z "${first_n:-}" ]; then
		first_n=$n first_per=$per first_label=$label
	else
		row "time per pod after the start, $label vs $first_label pods (workers)" \
			"$(awk -v p="$per" 'BEGIN { printf "%.1f µs", p * 1e6 }')" "$(awk -v p="$first_per" 'BEGIN { printf "%.1f µs", p * 1e6 }')" \
			"$(times "$per" "$first_per")" "0.75–1.25×" \
			"$(check 'v1 >= 0.75 * v2 && v1 <= 1.25 * v2' "$per" "$first_per")"
	fi
done

# --- the scheduler --------------------------------------------------------------------------

# A dry run of a role of 1,000 replicas against 1,000 in-process applies (BenchmarkApply with
# -benchtime 1000x), in turn; the ratio is the median of each dry run's to the 1,000 applies
# right after it. For the record: its start weighs as much as its work (no target).
if [ -n "$apply_ns" ]; then
	echo "measuring the dry run..." >&2
	: >"$tmp/dry"
	: >"$tmp/applies"
	dry_ok=1
	for ((i = 0; i < RUNS * 5; i++)); do
		if ! run_once "$tmp/dry" "$tmp/starpod" run --dry-run --app-id bench --overlay-root . testdata/bench/app-1000.yaml; then
			dry_ok=0
			break
		fi
		apply_once "$tmp/applies" 1000
	done
	if [ "$dry_ok" = 1 ]; then
		paste -d ' ' "$tmp/dry" "$tmp/applies" | awk '{ print $1 / ($3 * 1000 / 1e9) }' >"$tmp/dry.ratios"
		row "\`run --dry-run\` of 1,000 replicas vs 1,000 applies, in turn" "$(ms "$(median "$tmp/dry")")" \
			"$(ms "$(awk -v ns="$(median "$tmp/applies")" 'BEGIN { print ns * 1000 / 1e9 }')")" "$(times "$(median "$tmp/dry.ratios")" 1)" "" ""
	fi
fi

echo "| measured (the GPU overlay on the training pod) | starpod | compared with | ratio | target | met |"
echo "|---|---:|---:|---:|:---:|:---:|"
cat "$tmp/rows"
echo
echo "Machine: $(nproc) CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(go version | awk '{ print $3, $4 }')"
[ -z "$kubectl" ] || echo "kubectl: $("$kubectl" version --client 2>/dev/null | head -1)"
[ -z "$ytt" ] || echo "ytt: ${ytt_version:-$("$ytt" version 2>/dev/null | head -1)}"
