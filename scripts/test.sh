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
go test -race -count=1 ./...

echo "== fuzz (a few seconds each, so regressions show)"
for target in \
	./internal/convert:FuzzDecode ./internal/convert:FuzzRoundTrip ./internal/convert:FuzzRandomPod \
	./internal/stream:FuzzReader ./builtins:FuzzParsePath ./scheduler:FuzzParseApp; do
	pkg=${target%%:*} name=${target##*:}
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "${FUZZTIME:-5s}" -fuzzminimizetime 2s "$pkg"
done

if [ -x integration/run-tests.sh ]; then
	echo "== integration"
	integration/run-tests.sh
fi
