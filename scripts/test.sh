#!/usr/bin/env bash
# Runs every check and test of starpod: formatting, vet, module tidiness, the race-enabled
# tests of the root module, short fuzzing runs, and the integration tests against a real
# kube-apiserver (the integration/ module) when it is present.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== go mod tidy"
go mod tidy -diff

echo "== go test -race"
# Without the profile-guided optimisation of cmd/starpod (default.pgo), which changes no
# behaviour: it would build every dependency once more with the race detector. The runs
# below, and the integration tests' starpod, are built with it.
go test -race -pgo=off -count=1 ./...

echo "== determinism and the hostile corpus, without the race detector"
# The race detector makes every process several times slower and bigger, so the runs above
# do fewer determinism runs and allow workers more memory; these take the full counts and
# the tight bounds.
# One package at a time, so that the wall-time bounds of the hostile runs see less load.
go test -p 1 -count=1 -run 'Determinism|Hostile' ./engine ./scheduler
go test -count=1 -run 'TestScript/sandbox_hostile$' ./cmd/starpod

echo "== fuzz (a few thousand inputs each, so regressions show)"
# The budget is a count of inputs, not a duration: Go 1.26's fuzz coordinator can fail a
# target with a bare "context deadline exceeded" when a duration runs out while a worker
# is mid-input (go.dev/issue/75804, fixed in Go 1.27). A count has no deadline to race.
# Each target is package:name:inputs; FuzzRandomPod fills whole pods, so it gets fewer.
for target in \
	./internal/convert:FuzzDecode:3000 ./internal/convert:FuzzRoundTrip:3000 ./internal/convert:FuzzDecodePodFast:3000 \
	./internal/convert:FuzzRandomPod:500 ./internal/convert:FuzzDecodePodYAML:3000 \
	./internal/stream:FuzzReader:3000 ./internal/fast:FuzzJSONToYAML:3000 ./internal/fast:FuzzBlockYAML:3000 \
	./builtins:FuzzParsePath:3000 ./scheduler:FuzzParseApp:3000 ./engine:FuzzPodDecoder:3000 \
	./cmd/starpod:FuzzWriteResourceList:3000; do
	IFS=: read -r pkg name inputs <<<"$target"
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "${FUZZTIME:-${inputs}x}" -fuzzminimizetime 2s "$pkg"
done

if [ -x integration/run-tests.sh ]; then
	echo "== integration"
	integration/run-tests.sh
fi
