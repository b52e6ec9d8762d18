#!/usr/bin/env bash
# Measures the webhook under load and prints the tables of docs/webhook.md: one row a case,
# then the targets, each measured and met or not. webhook.BenchmarkLoad serves the GPU overlay
# (examples/gpu-tolerations) as `starpod webhook` serves it (overlays in worker processes of
# the rule's own, the default limits) over TLS, and a client process of its own, as the API
# server is, sends a 3.2 KB AdmissionReview of a Deployment's pod (encoded as the API server
# encodes it) over one keep-alive HTTP/2 connection, as the API server calls webhooks:
#
#   - closed loop: 1, 4, 16 and 64 clients, each sending its next review once it has its answer;
#   - open loop: 500 and 1,000 reviews a second, and twice what 16 clients got, each sent at its
#     time whatever the answers;
#   - 4 clients beside 64 that send their headers and then trickle their bodies, a byte every
#     100ms, and beside 2 that send another rule's memory bomb (whose workers die and are
#     replaced, backing off: the restarts of that row are the bomb's).
#
# Every answer is checked: allowed with the overlay's patch, for the review's uid, or refused
# (429, or denied); any other answer fails the run. A request that gets no answer (its
# connection broke) is counted under "no answer". Latencies are the clients' (from sending to
# the answer); "in the webhook" is what its handler took, from the request's headers to its
# answer, which is what the webhook's deadline (8s) bounds; "CPU per review" is the CPU time of
# the webhook's process (not its workers', nor the clients') per review answered. Each case runs for DURATION
# (default 5s) on a server of its own. The load average of the machine before and after is
# printed under the tables: on a busy machine the figures are the machine's as much as the
# webhook's.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${DURATION:-5s}
before=$(cut -d' ' -f1-3 /proc/loadavg)
out=$(go test -run '^$' -bench '^BenchmarkLoad$' -benchtime 1x -count 1 -timeout 30m ./webhook -webhook-load-duration="$duration" 2>&1) || {
	echo "$out" >&2
	exit 1
}
after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "| load ($duration each) | reviews/s | p50 | p99 | max | max in the webhook | sent | refused (429) | refusals: p99, slowest (in the webhook) | no answer | worker restarts | CPU per review |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
echo "$out" | awk -v deadline_ms=8000 '
/^BenchmarkLoad\// {
	name = $1
	sub(/^BenchmarkLoad\//, "", name)
	sub(/-[0-9]+$/, "", name)
	for (i = 3; i < NF; i += 2) v[name, $(i + 1)] = $i
	names[++n] = name
}
function get(c, m) { return v[c, m] + 0 }
function target(what, measured, ok) {
	targets[++t] = sprintf("| %s | %s | %s |", what, measured, ok ? "met" : "**not met**")
}
END {
	for (k = 1; k <= n; k++) {
		name = names[k]
		if (name ~ /^closed-/) { c = name; sub(/^closed-/, "", c); label = "closed loop, " c (c == 1 ? " client" : " clients") }
		else if (name == "open-2x") label = sprintf("open loop at %d/s, twice what 16 clients got", get(name, "offered/s"))
		else if (name ~ /^open-/) { r = name; sub(/^open-/, "", r); label = "open loop at " r }
		else if (name == "slow-clients") label = "4 clients beside 64 that trickle their bodies"
		else if (name == "beside-bomb") label = "4 clients beside 2 sending another rule'"'"'s memory bomb"
		else label = name
		printf "| %s | %d | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %d | %d (%d) | %.1f ms, %.1f ms (%.1f ms) | %d | %d | %d µs |\n", label,
			get(name, "reviews/s"), get(name, "p50-ms"), get(name, "p99-ms"), get(name, "max-ms"), get(name, "server-max-ms"),
			get(name, "sent"), get(name, "refused"), get(name, "refused-429"), get(name, "refused-p99-ms"), get(name, "refused-max-ms"),
			get(name, "server-refused-max-ms"), get(name, "lost"), get(name, "restarts"), get(name, "cpu-us/review")
	}
	target("≥ 1,000 reviews/s with 16 clients", sprintf("%d/s", get("closed-16", "reviews/s")), get("closed-16", "reviews/s") >= 1000)
	target("open loop at 500/s: p99 ≤ 10 ms, none refused", sprintf("p99 %.1f ms, %d refused", get("open-500/s", "p99-ms"), get("open-500/s", "refused")),
		get("open-500/s", "p99-ms") <= 10 && get("open-500/s", "refused") == 0)
	target("64 clients at once: all served within the deadline, none refused",
		sprintf("%d refused, the longest %.0f ms in the webhook", get("closed-64", "refused"), get("closed-64", "server-max-ms")),
		get("closed-64", "refused") == 0 && get("closed-64", "lost") == 0 && get("closed-64", "server-max-ms") < deadline_ms)
	target("beside 64 slow clients: served, p99 ≤ 20 ms", sprintf("p99 %.1f ms, %d refused", get("slow-clients", "p99-ms"), get("slow-clients", "refused")),
		get("slow-clients", "p99-ms") <= 20 && get("slow-clients", "refused") == 0)
	target("twice the capacity: every answer within the deadline, no worker restarts, the excess refused promptly (429 within a tenth of the deadline, p99)",
		sprintf("the longest %.0f ms in the webhook, %d restarts, %d refused with 429: p99 %.0f ms, the slowest %.0f ms", get("open-2x", "server-max-ms"),
			get("open-2x", "restarts"), get("open-2x", "refused-429"), get("open-2x", "refused-p99-ms"), get("open-2x", "refused-max-ms")),
		get("open-2x", "server-max-ms") < deadline_ms && get("open-2x", "restarts") == 0 && get("open-2x", "lost") == 0 &&
			get("open-2x", "refused-429") == get("open-2x", "refused") && get("open-2x", "refused-p99-ms") <= deadline_ms / 10)
	target("beside a memory bomb: p99 within 2× of 4 clients'\''", sprintf("%.1f ms against %.1f ms: %.2f×", get("beside-bomb", "p99-ms"), get("closed-4", "p99-ms"),
		get("beside-bomb", "p99-ms") / get("closed-4", "p99-ms")), get("beside-bomb", "p99-ms") <= 2 * get("closed-4", "p99-ms") && get("beside-bomb", "refused") == 0)
	print ""
	print "| target | measured | |"
	print "|---|---|---|"
	for (k = 1; k <= t; k++) print targets[k]
}'
echo
echo "$(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')); load average before: $before, after: $after."
