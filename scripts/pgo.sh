#!/usr/bin/env bash
# Makes cmd/starpod/default.pgo: the CPU profile with which the go command optimises the
# starpod binary (profile-guided optimisation; go build, go install and go test of
# cmd/starpod use it by themselves). It profiles what starpod spends its time on, with the
# overlays in process (--isolation none), where they take the paths they take in workers:
#
#   - apply of the GPU overlay to 10,000 training pods, as YAML and as JSON;
#   - run --dry-run of a role of 1,000 replicas (testdata/bench/app-1000.yaml), 40 times.
#
# Run it again when the hot paths change (conversion, the interpreter, reading and printing),
# and commit the profile; scripts/bench.sh measures with it.
#
#   scripts/pgo.sh
set -euo pipefail
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/starpod" ./cmd/starpod
scripts/pods.sh 10000 >"$tmp/pods.yaml"
overlay=examples/gpu-tolerations/overlay.star
"$tmp/starpod" apply --isolation none --overlay-script "$overlay" -o json -f "$tmp/pods.yaml" >"$tmp/pods.json"

export STARPOD_CPUPROFILE="$tmp/profile"
for _ in 1 2; do
	"$tmp/starpod" apply --isolation none --overlay-script "$overlay" -f "$tmp/pods.yaml" >/dev/null
done
"$tmp/starpod" apply --isolation none --max-document-size 64Mi --overlay-script "$overlay" -f "$tmp/pods.json" >/dev/null
for _ in $(seq 40); do
	"$tmp/starpod" run --dry-run --isolation none --app-id pgo --overlay-root . testdata/bench/app-1000.yaml >/dev/null
done
unset STARPOD_CPUPROFILE

go tool pprof -proto "$tmp"/profile.*.pprof >cmd/starpod/default.pgo
echo "wrote cmd/starpod/default.pgo ($(wc -c <cmd/starpod/default.pgo) bytes)"
