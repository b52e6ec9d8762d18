package early

import (
	"strings"
	"testing"
)

func TestWantsWorker(t *testing.T) {
	for _, tc := range []struct {
		args string
		want bool
	}{
		{"", false},
		{"version", false},
		{"test overlays/", false},
		{"webhook --config rules.yaml", false},
		{"apply -f pods.yaml", false}, // no overlay: no worker
		{"apply --overlay-script gpu.star -f pods.yaml", true},
		{"apply --overlay-script=gpu.star", true},
		{"apply --isolation none --overlay-script gpu.star", false},
		{"apply --isolation=none --overlay-script gpu.star", false},
		{"apply --isolation worker --overlay-script gpu.star", true},
		{"apply --isolation=worker --overlay-script gpu.star", true},
		{"apply --overlay-script gpu.star --isolation", false},
		{"apply --max-memory 1Gi --overlay-script gpu.star", false},
		{"apply --max-memory=1Gi --overlay-script gpu.star", false},
		{"apply --overlay-script gpu.star --help", false},
		{"run --dry-run app.yaml", true},
		{"run dist.ddp -j 2x8 -h gpu.small --script train.py", true},
		{"run --isolation none app.yaml", false},
		{"run app.yaml -- --isolation none", true}, // after --, arguments of the app
		{"run --help", false},
		{"run -h", false},
		{"run --dry-run -h app.yaml", false},
		{"apply -h", false},
		{"fn", true},
		{"fn --overlay-script gpu.star", true},
		{"fn --isolation none", false},
		{"fn --max-memory 1Gi", false},
		{"fn -h", false},
		{"fn --help", false},
		{"apply --overlay-script gpu.star -f pods.yaml -h", false},
	} {
		if got := wantsWorker(strings.Fields(tc.args)); got != tc.want {
			t.Errorf("wantsWorker(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
