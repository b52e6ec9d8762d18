#!/usr/bin/env bash
# Measures the webhook under load and prints one Markdown table, the one in docs/webhook.md:
# webhook.BenchmarkLoad serves the GPU overlay (examples/gpu-tolerations) as `starpod webhook`
# serves it (overlays in worker processes of the rule's own, the default limits) over TLS, and
# sends a 3.2 KB AdmissionReview of a Deployment's pod over keep-alive connections, with HTTP/2 as
# the API server calls webhooks:
#
#   - closed loop: 1, 4, 16 and 64 clients, each sending its next review once it has its answer;
#   - open loop: 500 and 1,000 reviews a second, and twice what 16 clients got, each sent at its
#     time whatever the answers;
#   - 4 clients beside 64 that send their headers and then trickle their bodies, a byte every
#     100ms, and beside 2 that send another rule's memory bomb (whose workers die and are
#     replaced: the restarts of that row are the bomb's).
#
# Every answer is checked: allowed with the overlay's patch, for the review's uid, or refused
# (429, or denied); any other answer fails the run. A request that gets no answer (its
# connection broke) is counted under "no answer". Latencies are the clients' (from sending to
# the answer); "max in the webhook" is the longest its handler took, from the request's headers
# to its answer, which is what the webhook's deadline bounds. Each case runs for DURATION (default 5s) on a
# server of its own. The load average of the machine before and after is printed under the
# table: on a busy machine the figures are the machine's as much as the webhook's.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${DURATION:-5s}
before=$(cut -d' ' -f1-3 /proc/loadavg)
out=$(go test -run '^$' -bench '^BenchmarkLoad$' -benchtime 1x -count 1 -timeout 30m ./webhook -webhook-load-duration="$duration" 2>&1) || {
	echo "$out" >&2
	exit 1
}
after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "| load ($duration each) | reviews/s | p50 | p99 | max | max in the webhook | sent | refused (429) | slowest refusal | no answer | worker restarts |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
echo "$out" | awk '
/^BenchmarkLoad\// {
	name = $1
	sub(/^BenchmarkLoad\//, "", name)
	sub(/-[0-9]+$/, "", name)
	delete v
	for (i = 3; i < NF; i += 2) v[$(i + 1)] = $i
	if (name ~ /^closed-/) { n = name; sub(/^closed-/, "", n); label = "closed loop, " n (n == 1 ? " client" : " clients") }
	else if (name == "open-2x") label = sprintf("open loop at %d/s, twice what 16 clients got", v["offered/s"])
	else if (name ~ /^open-/) { r = name; sub(/^open-/, "", r); label = "open loop at " r }
	else if (name == "slow-clients") label = "4 clients beside 64 that trickle their bodies"
	else if (name == "beside-bomb") label = "4 clients beside 2 sending another rule'"'"'s memory bomb"
	else label = name
	printf "| %s | %d | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %d | %d (%d) | %.1f ms | %d | %d |\n", label, v["reviews/s"], v["p50-ms"], v["p99-ms"], v["max-ms"], v["server-max-ms"], v["sent"], v["refused"], v["refused-429"], v["refused-max-ms"], v["lost"], v["restarts"]
}'
echo
echo "$(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')); load average before: $before, after: $after."
