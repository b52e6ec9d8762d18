package webhook

import (
	"bytes"
	"encoding/json"
	"testing"

	jsonpatch5 "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gomodules.xyz/jsonpatch/v2"
)

// FuzzMakePatch: for any two JSON objects, the patch from the first applies to it and gives
// the second, and diffJSON, which skips the members the two share, makes the operations
// gomodules.xyz/jsonpatch makes of the whole documents.
func FuzzMakePatch(f *testing.F) {
	f.Add(`{"a":{"b":[1,2,3]},"c":"x"}`, `{"a":{"b":[1,5]},"d":{"e":{}}}`)
	f.Add(`{"spec":{"containers":[{"name":"c"}]}}`, `{"spec":{"containers":[{"name":"c","resources":{"limits":{"x":"1"}}},{"name":"d"}]}}`)
	f.Add(`{"a~b/c":[[]]}`, `{"a~b/c":[[1],[]]}`)
	f.Add(`{"a":{"b":{"c":{"d":{"e":{"f":1}}}}}}`, `{"a":{"b":{"c":{"d":{"e":{"f":2}}}}}}`)
	f.Add(`{"a":{"x/y":{"~":1},"n":null}, "k": 1.0}`, `{"a":{"x/y":{"~":2},"n":{}},"k":1}`)
	f.Fuzz(func(t *testing.T, from, to string) {
		var a, b map[string]any
		if json.Unmarshal([]byte(from), &a) != nil || json.Unmarshal([]byte(to), &b) != nil || a == nil || b == nil {
			return
		}
		pruned, err := diffJSON([]byte(from), []byte(to), "", maxPruneDepth)
		if err != nil {
			t.Fatal(err)
		}
		whole, err := jsonpatch.CreatePatch([]byte(from), []byte(to))
		if err != nil {
			t.Fatal(err)
		}
		sortOps(pruned)
		sortOps(whole)
		if diff := cmp.Diff(whole, pruned, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("diffJSON(%s, %s) differs from CreatePatch (-whole +pruned):\n%s", from, to, diff)
		}
		patch, err := makePatch([]byte(from), []byte(from), []byte(to))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(patch, []byte(`/"`)) || bytes.Contains(patch, []byte("//")) {
			// A path through a member whose key is empty: evanphx/json-patch, the API
			// server's, does not find such members. Kubernetes objects have none.
			return
		}
		got := []byte(from)
		if patch != nil {
			p, err := jsonpatch5.DecodePatch(patch)
			if err != nil {
				t.Fatal(err)
			}
			if got, err = p.Apply(got); err != nil {
				t.Fatalf("patch %s: %v", patch, err)
			}
		}
		if !jsonpatch5.Equal(got, []byte(to)) {
			t.Errorf("patch %s gives %s, want %s", patch, got, to)
		}
	})
}

// FuzzParseConfig: no config text makes the parser panic.
func FuzzParseConfig(f *testing.F) {
	f.Add(gpuConfig)
	f.Add("apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrules:\n- name: a\n  overlays: [a.star]\n  match: {labelSelector: {matchExpressions: [{key: x, operator: In}]}}\n")
	f.Fuzz(func(t *testing.T, config string) {
		ParseConfig("config.yaml", []byte(config))
	})
}
