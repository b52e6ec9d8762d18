package webhook

import (
	"strings"
	"testing"
)

// TestRecordAccumulates: the annotation keeps the entries a pod came with (from its template,
// another webhook, an earlier invocation), first, and adds this admission's, each once.
func TestRecordAccumulates(t *testing.T) {
	f := newFixture(t, map[string]string{"config.yaml": gpuConfig, "gpu.star": gpuOverlay}, nil)
	mine := "gpu-pool/gpu.star@sha256:" + hash([]byte(gpuOverlay))[:12]
	for _, tc := range []struct{ name, sent, want string }{
		{"none", "", mine},
		{"template and another webhook", "tmpl/a.star@sha256:0123456789ab,other/b.star@sha256:ba9876543210",
			"tmpl/a.star@sha256:0123456789ab,other/b.star@sha256:ba9876543210," + mine},
		// An earlier invocation ran this overlay, and a later webhook undid its change.
		{"earlier invocation", "tmpl/a.star@sha256:0123456789ab," + mine, "tmpl/a.star@sha256:0123456789ab," + mine},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := trainerPod
			if tc.sent != "" {
				pod = strings.Replace(pod, "  labels: {team: ml}", "  labels: {team: ml}\n  annotations: {starpod.dev/overlays: \""+tc.sent+"\"}", 1)
			}
			req := podRequest(t, pod)
			got, _ := patched(t, req, f.review(req))
			if a := got.Annotations[AppliedAnnotation]; a != tc.want {
				t.Errorf("annotation %q, want %q", a, tc.want)
			}
		})
	}
}

func TestRecord(t *testing.T) {
	for _, tc := range []struct {
		sent, kept string
		applied    []string
		want       string
	}{
		{"", "", []string{"r/a@1", "r/b@2"}, "r/a@1,r/b@2"},
		{"x@0, r/a@1", "x@0, r/a@1", []string{"r/a@1", "r/b@2"}, "x@0,r/a@1,r/b@2"},
		{"x@0", "y@9", []string{"r/a@1"}, "x@0,y@9,r/a@1"},
		{",,", "", nil, ""},
	} {
		if got := record(tc.sent, tc.kept, tc.applied); got != tc.want {
			t.Errorf("record(%q, %q, %q) = %q, want %q", tc.sent, tc.kept, tc.applied, got, tc.want)
		}
	}
}
