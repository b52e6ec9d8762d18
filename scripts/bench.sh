#!/usr/bin/env bash
# Measures starpod and prints one table (Markdown):
#
#   - in process: µs/op and allocs/op of BenchmarkApply (the GPU overlay on the training pod,
#     compiled once), BenchmarkCompile and, where they exist, BenchmarkApplyWorker and
#     BenchmarkApplyWorkerBatch (applies in isolated worker processes, one pod or 64 pods a
#     round trip, per pod) against BenchmarkJSONRoundTrip of the same pod;
#   - end to end: the median wall time and peak RSS of `starpod apply` over N copies of the
#     training pod (distinct names), with overlays in worker processes (the default) and in
#     process (--isolation none), against `kubectl kustomize` with the equivalent
#     strategic-merge patch and against ytt with the equivalent overlay, with ratios. Peak RSS
#     is given twice: the largest of any one process (starpod's own or one of its overlay
#     workers, from /usr/bin/time) and the largest sum over all of the run's processes at
#     once (sampled every 20 ms in a run of its own);
#   - the scheduler: `starpod run --dry-run` of a role of 1,000 replicas
#     (testdata/bench/app-1000.yaml) against 1,000 in-process applies.
#
# Each ratio is of measurements taken in turn, so that a change of the machine's speed touches
# both sides alike: Apply against the JSON round trip in one loop (BenchmarkApplyVsJSON), apply
# with workers and in process one run after the other, each pair followed from 10,000 pods by
# 5,000 applies (for the wall time per pod against Apply), each dry run by 1,000 applies.
#
# kubectl and ytt rows are skipped when the tool is absent. Set YTT_INSTALL=1 to install ytt
# v0.52.0 with `go install` into a temporary directory when it is not on PATH.
#
# Settings (environment): SIZES (default "1000 10000 100000"), OTHERS_MAX_PODS (sizes above it
# measure starpod alone, for its time per pod; default 10000), RUNS (runs per measurement, median
# taken; default 3), SLOW_RUNS (runs of kubectl and ytt at sizes above 1000; default 1),
# BENCHTIME (-test.benchtime; default 1s), COUNT (runs of the engine benchmarks, median
# taken; default 5), KUBECTL_MAX_PODS (sizes above it run kubectl once, stopped after
# KUBECTL_CAP times starpod's wall time, default 30, the target: it needs many minutes there,
# and a stop still proves the ratio; default no limit).
#
# The targets (issue 17): Apply ≤ 0.75× the JSON round trip with no more allocations; with
# workers, ≥ 10× faster than ytt from 10,000 pods (3× below, where starting the processes
# weighs), ≥ 30× faster than kubectl kustomize, a peak RSS ≤ 32 MiB for every process, the
# wall time per pod ≤ 2× Apply's from 10,000 pods and ≤ 1.25× that of --isolation none;
# the time per pod flat across SIZES; run --dry-run of 1,000 replicas ≤ 1.5× 1,000 applies.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

SIZES=${SIZES:-"1000 10000 100000"}
OTHERS_MAX_PODS=${OTHERS_MAX_PODS:-10000}
RUNS=${RUNS:-3}
SLOW_RUNS=${SLOW_RUNS:-1}
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

# --- in process -----------------------------------------------------------------------------

echo "running the engine benchmarks $COUNT times (benchtime $BENCHTIME)..." >&2
# One test binary run COUNT times, so that a change of the machine's load during the run
# touches every benchmark alike. It is built with the profile the starpod binary is built
# with (cmd/starpod/default.pgo, see scripts/pgo.sh), so that starpod's times are compared
# with those of the same code.
go test -c -pgo="$root/cmd/starpod/default.pgo" -o "$tmp/engine.test" ./engine/
: >"$tmp/bench.txt"
for ((i = 0; i < COUNT; i++)); do
	(cd engine && "$tmp/engine.test" -test.run '^$' -test.benchmem -test.benchtime "$BENCHTIME" \
		-test.bench '^Benchmark(Apply|ApplyParallel|ApplyWorker|ApplyWorkerBatch|ApplyEachWorker|ApplyEachWorkerDistinct|ApplyVsJSON|JSONRoundTrip|GoMutation|Compile)$') >>"$tmp/bench.txt"
done

# median_bench NAME UNIT prints the median of the values of benchmark NAME in UNIT (ns/op,
# allocs/op, apply/json).
median_bench() {
	awk -v name="$1" -v unit="$2" '
		$1 ~ "^Benchmark" name "(-[0-9]+)?$" { for (i = 2; i < NF; i++) if ($(i+1) == unit) print $i }
	' "$tmp/bench.txt" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'
}

json_ns=$(median_bench JSONRoundTrip ns/op)
json_allocs=$(median_bench JSONRoundTrip allocs/op)
apply_ns=$(median_bench Apply ns/op)

# target NAME MEASURED OK records a row of the targets table printed at the end.
: >"$tmp/targets"
target() {
	local met=no
	if [ "$3" = 1 ]; then met=yes; fi
	printf '| %s | %s | %s |\n' "$1" "$2" "$met" >>"$tmp/targets"
}
# check EXPR VALUES... prints 1 if the awk expression EXPR over v1, v2, ... holds, else 0.
check() {
	local expr=$1
	shift
	awk -v v1="${1:-0}" -v v2="${2:-0}" -v v3="${3:-0}" "BEGIN { print (($expr) ? 1 : 0) }"
}

echo
echo "In process (medians of $COUNT runs; the training pod and the GPU overlay)"
echo
echo "| benchmark | µs/op | allocs/op | time vs JSON round trip | allocs vs JSON round trip |"
echo "|---|---:|---:|---:|---:|"
for name in JSONRoundTrip Apply ApplyParallel Compile GoMutation; do
	ns=$(median_bench "$name" ns/op)
	allocs=$(median_bench "$name" allocs/op)
	[ -n "$ns" ] || continue
	awk -v n="$name" -v ns="$ns" -v a="$allocs" -v jn="$json_ns" -v ja="$json_allocs" 'BEGIN {
		printf "| %s | %.1f | %d | %.2f× | %.2f× |\n", n, ns / 1000, a, ns / jn, a / ja
	}'
done
echo
echo "In worker processes, per pod (wall time; the parent's allocations; the CPU time of the worker)"
echo
echo "| benchmark | µs/op | parent allocs/op | worker CPU µs/op | time vs Apply |"
echo "|---|---:|---:|---:|---:|"
for name in ApplyWorker ApplyWorkerBatch ApplyEachWorker ApplyEachWorkerDistinct; do
	ns=$(median_bench "$name" ns/op)
	[ -n "$ns" ] || continue
	awk -v n="$name" -v ns="$ns" -v a="$(median_bench "$name" allocs/op)" -v w="$(median_bench "$name" worker-cpu-ns/op)" -v an="$apply_ns" 'BEGIN {
		printf "| %s | %.1f | %d | %.1f | %.2f× |\n", n, ns / 1000, a, w / 1000, ns / an
	}'
done
apply_allocs=$(median_bench Apply allocs/op)
# The ratio of Apply to the round trip is that of the two interleaved in one loop (the median
# of COUNT runs of BenchmarkApplyVsJSON): the medians of the two benchmarks apart are taken
# seconds apart, and the machine's speed changes in between.
ratio=$(median_bench ApplyVsJSON apply/json)
if [ -n "$ratio" ]; then
	target "Apply ≤ 0.75× the JSON round trip (interleaved)" "$(awk -v r="$ratio" 'BEGIN { printf "%.2f×", r }')" "$(check 'v1 <= 0.75' "$ratio")"
else
	target "Apply ≤ 0.75× the JSON round trip" "$(awk -v a="$apply_ns" -v j="$json_ns" 'BEGIN { printf "%.2f×", a / j }')" "$(check 'v1 <= 0.75 * v2' "$apply_ns" "$json_ns")"
fi
target "Apply allocations ≤ the JSON round trip's" "$apply_allocs vs $json_allocs" "$(check 'v1 <= v2' "$apply_allocs" "$json_allocs")"
compile_ns=$(median_bench Compile ns/op)
target "compile + init ≤ 200 µs" "$(awk -v c="$compile_ns" 'BEGIN { printf "%.1f µs", c / 1000 }')" "$(check 'v1 <= 200000' "$compile_ns")"
for name in ApplyWorkerBatch ApplyEachWorkerDistinct; do
	ns=$(median_bench "$name" ns/op)
	[ -n "$ns" ] || continue
	target "$name ≤ 2× Apply per pod" "$(awk -v w="$ns" -v a="$apply_ns" 'BEGIN { printf "%.2f×", w / a }')" "$(check 'v1 <= 2 * v2' "$ns" "$apply_ns")"
done
if [ -n "$ratio" ]; then
	echo
	echo "Apply and the JSON round trip interleaved in one loop (BenchmarkApplyVsJSON, median of $COUNT runs): Apply takes ${ratio}× the time of the round trip."
fi

# --- end to end -----------------------------------------------------------------------------

echo "building starpod..." >&2
# Static, as a release is built: without cgo, no process maps the C library (about 1.5 MiB
# less resident memory in each).
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

# pods N writes N copies of the training pod, named pod-0 ... pod-(N-1), without comments.
pods() {
	scripts/pods.sh "$1"
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

# median FILE prints the median of the numbers in FILE, one a line.
median() {
	sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'
}

# measure_pair RUNS [APPLIES] runs the commands in the arrays cmd_a and cmd_b in turn, RUNS
# times each, so that a change of the machine's speed during the measurement touches both
# alike, and prints "seconds kib seconds kib": summarize of cmd_a's runs, then of cmd_b's.
# With APPLIES, each turn ends with a run of BenchmarkApply over that many applies, whose
# median it prints last (ns/op), for the ratio of the wall time per pod to Apply. The output
# left in $tmp/out.yaml is cmd_a's.
measure_pair() {
	local runs=$1 applies=${2:-0} i
	: >"$tmp/times.a"
	: >"$tmp/times.b"
	: >"$tmp/times.apply"
	for ((i = 0; i < runs; i++)); do
		run_once "$tmp/times.b" "${cmd_b[@]}" || return 1
		run_once "$tmp/times.a" "${cmd_a[@]}" || return 1
		if [ "$applies" -gt 0 ]; then apply_once "$tmp/times.apply" "$applies"; fi
	done
	echo "$(summarize "$tmp/times.a") $(summarize "$tmp/times.b") $(median "$tmp/times.apply")"
}

# tree_rss CMD... runs CMD once (output discarded) and prints two numbers in KiB: the largest
# sum of the resident memory of CMD and all its descendants at one time, and the largest peak
# of any one of them (its VmHWM, which the kernel keeps), both sampled every 20 ms. The peak
# of one process comes from /proc rather than from /usr/bin/time, which counts only the
# processes CMD waited for: CMD may exit before its workers do. A run short enough to end
# before a sample saw it is run again, three times at most.
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

echo
echo "End to end (GPU overlay on N training pods with distinct names; median wall time of $RUNS runs, $SLOW_RUNS for other tools above 1,000 pods; starpod with workers and in process in turn, $((RUNS * 5)) runs each at 1,000 pods; peak RSS)"
echo
echo "| pods | tool | wall s | peak RSS MiB, largest process | peak RSS MiB, all processes | starpod faster by |"
echo "|---:|---|---:|---:|---:|---:|"
for n in $SIZES; do
	dir=$tmp/n$n
	mkdir -p "$dir"
	pods "$n" >"$dir/pods.yaml"
	cat >"$dir/kustomization.yaml" <<EOF
resources:
- pods.yaml
patches:
- target:
    kind: Pod
  path: patch.yaml
EOF
	cp "$tmp/patch.yaml" "$dir/patch.yaml"
	slow=$RUNS
	if [ "$n" -gt 1000 ]; then slow=$SLOW_RUNS; fi

	echo "measuring $n pods..." >&2
	# With workers and in process, in turn; a run of 1,000 pods takes a tenth of a second:
	# take the median of more runs there.
	cmd_a=("$tmp/starpod" apply --overlay-script "$tmp/overlay.star" -f "$dir/pods.yaml")
	cmd_b=("$tmp/starpod" apply --isolation none --overlay-script "$tmp/overlay.star" -f "$dir/pods.yaml")
	pair_runs=$RUNS
	if [ "$n" -le 1000 ]; then pair_runs=$((RUNS * 5)); fi
	# From 10,000 pods, Apply is measured in turn with the runs too, for the ratio of the
	# wall time per pod to it: 5,000 applies take about a quarter of a second.
	applies=0
	if [ "$n" -ge 10000 ]; then applies=5000; fi
	read -r s_t s_m i_t i_m turn_ns < <(measure_pair "$pair_runs" "$applies")
	docs=$(grep -c '^kind: Pod' "$tmp/out.yaml")
	if [ "$docs" != "$n" ]; then
		echo "bench: starpod wrote $docs pods, want $n" >&2
		exit 1
	fi
	read -r s_all s_one < <(tree_rss "$tmp/starpod" apply --overlay-script "$tmp/overlay.star" -f "$dir/pods.yaml")
	if [ "$s_one" -gt "$s_m" ]; then s_m=$s_one; fi
	awk -v n="$n" -v t="$s_t" -v m="$s_m" -v a="$s_all" 'BEGIN {
		printf "| %d | starpod apply (workers) | %.2f | %.1f | %.1f | |\n", n, t, m / 1024, a / 1024 }'
	awk -v n="$n" -v t="$i_t" -v m="$i_m" 'BEGIN {
		printf "| %d | starpod apply --isolation none | %.2f | %.1f | %.1f | |\n", n, t, m / 1024, m / 1024 }'
	target "peak RSS ≤ 32 MiB, $n pods, in process" "$(awk -v m="$i_m" 'BEGIN { printf "%.1f MiB", m / 1024 }')" "$(check 'v1 <= 32 * 1024' "$i_m")"
	target "peak RSS ≤ 32 MiB, $n pods, with workers: largest process (all processes: $(awk -v a="$s_all" 'BEGIN { printf "%.1f", a / 1024 }') MiB)" "$(awk -v m="$s_m" 'BEGIN { printf "%.1f MiB", m / 1024 }')" "$(check 'v1 <= 32 * 1024' "$s_m")"
	target "workers ≤ 1.25× --isolation none, $n pods" "$(awk -v s="$s_t" -v i="$i_t" 'BEGIN { printf "%.2f×", s / i }')" "$(check 'v1 <= 1.25 * v2' "$s_t" "$i_t")"
	if [ "$n" -ge 10000 ]; then
		target "wall time per pod ≤ 2× Apply (measured in turn), $n pods, with workers" \
			"$(awk -v t="$s_t" -v n="$n" -v a="$turn_ns" 'BEGIN { printf "%.2f× (%.1f µs vs %.1f µs)", (t / n * 1e9) / a, t / n * 1e6, a / 1000 }')" \
			"$(check '(v1 / v2 * 1e9) <= 2 * v3' "$s_t" "$n" "$turn_ns")"
	fi
	if [ -z "${first_n:-}" ]; then
		first_n=$n first_t=$s_t
	else
		target "linear: time per pod at $n vs $first_n pods ≤ 1.25×" \
			"$(awk -v t="$s_t" -v n="$n" -v ft="$first_t" -v fn="$first_n" 'BEGIN { printf "%.2f×", (t / n) / (ft / fn) }')" \
			"$(check '(v1 / v2) <= 1.25 * (v3 / '"$first_n"')' "$s_t" "$n" "$first_t")"
	fi
	if [ "$n" -gt "$OTHERS_MAX_PODS" ]; then
		continue # starpod alone: the sizes above are for its time per pod
	fi
	if [ -n "$kubectl" ] && [ "$n" -le "$KUBECTL_MAX_PODS" ]; then
		read -r k_t k_m < <(measure "$slow" "$kubectl" kustomize "$dir")
		awk -v n="$n" -v t="$k_t" -v m="$k_m" -v st="$s_t" 'BEGIN {
			printf "| %d | kubectl kustomize | %.2f | %.1f | %.1f | %.1f× |\n", n, t, m / 1024, m / 1024, t / st }'
		target "≥ 30× faster than kubectl kustomize, $n pods" "$(awk -v k="$k_t" -v s="$s_t" 'BEGIN { printf "%.1f×", k / s }')" "$(check 'v1 >= 30 * v2' "$k_t" "$s_t")"
	elif [ -n "$kubectl" ]; then
		# One run, stopped at KUBECTL_CAP times starpod's time: if it is stopped, starpod is
		# faster by more than that.
		cap=$(awk -v s="$s_t" -v c="$KUBECTL_CAP" 'BEGIN { printf "%.0f", s * c + 1 }')
		echo "measuring kubectl kustomize over $n pods, stopped after $cap s..." >&2
		start=$(date +%s%N)
		if timeout "$cap" "$kubectl" kustomize "$dir" >/dev/null 2>"$tmp/err"; then
			end=$(date +%s%N)
			k_t=$(awk -v d="$((end - start))" 'BEGIN { printf "%.6f", d / 1e9 }')
			awk -v n="$n" -v t="$k_t" -v st="$s_t" 'BEGIN { printf "| %d | kubectl kustomize | %.2f | | | %.1f× |\n", n, t, t / st }'
			target "≥ 30× faster than kubectl kustomize, $n pods" "$(awk -v k="$k_t" -v s="$s_t" 'BEGIN { printf "%.1f×", k / s }')" "$(check 'v1 >= 30 * v2' "$k_t" "$s_t")"
		else
			awk -v n="$n" -v c="$cap" -v r="$KUBECTL_CAP" 'BEGIN { printf "| %d | kubectl kustomize | stopped at %d | | | > %d× |\n", n, c, r }'
			target "≥ 30× faster than kubectl kustomize, $n pods" "> ${KUBECTL_CAP}× (stopped at ${cap} s)" "$(check 'v1 >= 30' "$KUBECTL_CAP")"
		fi
	fi
	if [ -n "$ytt" ]; then
		read -r y_t y_m < <(measure "$slow" "$ytt" -f "$dir/pods.yaml" -f "$tmp/ytt-overlay.yaml")
		awk -v n="$n" -v t="$y_t" -v m="$y_m" -v st="$s_t" 'BEGIN {
			printf "| %d | ytt | %.2f | %.1f | %.1f | %.1f× |\n", n, t, m / 1024, m / 1024, t / st }'
		want=3
		if [ "$n" -ge 10000 ]; then want=10; fi
		target "≥ ${want}× faster than ytt, $n pods" "$(awk -v y="$y_t" -v s="$s_t" 'BEGIN { printf "%.1f×", y / s }')" "$(check "v1 >= $want * v2" "$y_t" "$s_t")"
	fi
done

# The scheduler: a dry run of a role of 1,000 replicas against 1,000 in-process applies
# (BenchmarkApply with -benchtime 1000x), in turn, so that both see the machine at the same
# speed. A dry run takes a tenth of a second: take the median of more runs.
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
	read -r r_t r_m < <(summarize "$tmp/dry")
	dry_ns=$(median "$tmp/applies")
	# The ratio is the median of each dry run's to the 1,000 applies right after it, so that
	# a change of the machine's speed between one pair and the next touches no ratio.
	paste -d ' ' "$tmp/dry" "$tmp/applies" | awk '{ print $1 / ($3 * 1000 / 1e9) }' >"$tmp/dry.ratios"
	dry_ratio=$(median "$tmp/dry.ratios")
	echo
	echo "| scheduler | wall s | peak RSS MiB | vs 1,000 in-process applies, in turn |"
	echo "|---|---:|---:|---:|"
	awk -v t="$r_t" -v m="$r_m" -v ns="$dry_ns" -v r="$dry_ratio" 'BEGIN {
		printf "| starpod run --dry-run, 1,000 replicas | %.3f | %.1f | %.2f× (%.3f s) |\n", t, m / 1024, r, ns * 1000 / 1e9 }'
	target "run --dry-run of 1,000 replicas ≤ 1.5× 1,000 applies" "$(awk -v r="$dry_ratio" 'BEGIN { printf "%.2f×", r }')" "$(check 'v1 <= 1.5' "$dry_ratio")"
else
	echo
	echo "starpod run --dry-run of testdata/bench/app-1000.yaml failed; no scheduler row."
fi

echo
echo "Targets of the performance issue"
echo
echo "| target | measured | met |"
echo "|---|---:|:---:|"
cat "$tmp/targets"

echo
echo "Machine: $(nproc) CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(go version | awk '{ print $3, $4 }')"
[ -z "$kubectl" ] || echo "kubectl: $("$kubectl" version --client 2>/dev/null | head -1)"
[ -z "$ytt" ] || echo "ytt: ${ytt_version:-$("$ytt" version 2>/dev/null | head -1)}"
