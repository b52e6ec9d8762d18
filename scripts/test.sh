#!/usr/bin/env bash
# Runs every check and test of starpod: formatting, vet, module tidiness, the race-enabled
# tests of the root module, the determinism and hostile runs without the race detector, every
# fuzz target of the module for a budget of inputs, and the integration tests against a real
# kube-apiserver (the integration/ module) when it is present.
#
# Every stage runs, whatever the stages before it gave; the script then names the stages that
# failed and exits 1 if any did. Every go test has a timeout that fits a loaded two-core
# machine. FUZZTIME (e.g. 30s, or 10000x) replaces every fuzz target's budget.
set -uo pipefail
cd "$(dirname "$0")/.."

failed=()

# stage NAME CMD... runs CMD as the stage NAME and records it if it fails.
stage() {
	local name=$1
	shift
	echo "== $name"
	if ! "$@"; then
		echo "-- $name: FAILED"
		failed+=("$name")
	fi
}

gofmt_check() {
	local unformatted
	unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
	if [ -n "$unformatted" ]; then
		echo "gofmt would change:"
		echo "$unformatted"
		return 1
	fi
}

stage gofmt gofmt_check
stage "go vet" go vet ./...
stage "go mod tidy" go mod tidy -diff

# Without the profile-guided optimisation of cmd/starpod (default.pgo), which changes no
# behaviour: it would build every dependency once more with the race detector. The runs
# below, and the integration tests' starpod, are built with it.
stage "go test -race" go test -race -pgo=off -count=1 -timeout 30m ./...

# The race detector makes every process several times slower and bigger, so the runs above
# do fewer determinism runs and allow workers more memory; these take the full counts and the
# tight bounds. One package at a time, so that the wall-time bounds of the hostile runs see
# less load.
stage "determinism and the hostile corpus" go test -p 1 -count=1 -timeout 20m -run 'Determinism|Hostile' ./engine ./scheduler
stage "the hostile corpus through the CLI" go test -count=1 -timeout 20m -run 'TestScript/sandbox_hostile$' ./cmd/starpod

# fuzz_budget NAME prints the number of inputs a fuzz target gets: a few thousand, so that
# regressions show. The budget is a count, not a duration: Go 1.26's fuzz coordinator can fail
# a target with a bare "context deadline exceeded" when a duration runs out while a worker is
# mid-input (go.dev/issue/75804, fixed in Go 1.27); a count has no deadline to race.
fuzz_budget() {
	case $1 in
	FuzzRandomPod) echo 500 ;; # fills whole pods
	*) echo 3000 ;;
	esac
}

# fuzz runs every fuzz target of the module, found in the test files of each package, one
# target at a time (go test -fuzz takes one), and fails if any failed.
fuzz() {
	local dir pkg name status=0
	while read -r dir pkg; do
		for name in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
			echo "-- $pkg $name"
			if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "${FUZZTIME:-$(fuzz_budget "$name")x}" \
				-fuzzminimizetime 2s -timeout 20m "$pkg"; then
				echo "-- $pkg $name: FAILED"
				status=1
			fi
		done
	done < <(go list -f '{{.Dir}} {{.ImportPath}}' ./...)
	return $status
}
stage "fuzz" fuzz

# The container image, built without a daemon by scripts/image (a module of its own).
stage image bash -c 'cd scripts/image && go vet ./... && go test -count=1 -timeout 20m ./...'

if [ -x integration/run-tests.sh ]; then
	stage integration integration/run-tests.sh
fi

if [ ${#failed[@]} -gt 0 ]; then
	echo
	echo "FAILED stages:"
	printf '  %s\n' "${failed[@]}"
	exit 1
fi
echo
echo "all stages passed"
