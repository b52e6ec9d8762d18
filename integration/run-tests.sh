#!/usr/bin/env bash
# Runs the integration tests: the starpod CLI against a real kube-apiserver, started in
# process with an embedded etcd on 127.0.0.1 (see main_test.go).
#
#   integration/run-tests.sh [go test flags...]     e.g. -run TestCancel -v
#
# Needs only Go. The first build compiles the API server: about 15 to 20 minutes on two
# cores with a cold build cache; later builds take seconds. The tests themselves take about
# a minute. Extra arguments go to "go test".
set -euo pipefail
cd "$(dirname "$0")"

# The API server's test harness finds its fixtures through the source file paths compiled
# into the binary, which -trimpath removes.
case " ${GOFLAGS:-} " in
*-trimpath*)
	echo "integration/run-tests.sh: GOFLAGS has -trimpath, which the API server's test harness cannot work with" >&2
	exit 2
	;;
esac

# This module's go.sum must follow the main module's requirements (the replace brings them
# in): after changing ../go.mod, run "go mod tidy" here too.
if ! go mod tidy -diff >/dev/null; then
	echo "integration/run-tests.sh: integration/go.mod or go.sum is out of date; run 'go mod tidy' in integration/" >&2
	go mod tidy -diff >&2 || true
	exit 1
fi

start=$(date +%s)
go vet ./...
built=$(date +%s)
echo "integration: vet and build $((built - start))s"
go test -count=1 -timeout 30m "$@" ./...
echo "integration: tests $(($(date +%s) - built))s"
