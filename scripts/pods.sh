#!/usr/bin/env bash
# Writes N copies of the training pod (testdata/pods/training.yaml) to standard output as one
# YAML stream, named pod-0 ... pod-(N-1), without comments: the input of scripts/bench.sh and
# scripts/pgo.sh.
#
#   scripts/pods.sh N
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:?usage: scripts/pods.sh N}
grep -v '^#' testdata/pods/training.yaml | awk -v n="$n" '
	{ lines[++k] = $0 }
	END {
		for (i = 0; i < n; i++) {
			if (i > 0) print "---"
			for (j = 1; j <= k; j++) {
				l = lines[j]
				if (l ~ /^  name: llama-ft-trainer-0$/) l = "  name: pod-" i
				print l
			}
		}
	}'
