package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/starpod/starpod/internal/fast"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/internal/stream"
)

// podYAMLWant returns what the path that DecodePodYAML stands in for gives for doc: the pod
// and defaults of Parse, DecodePod and PodDefaultsOf, and whether that path reads it as a
// pod without error. fast reports whether doc takes that path's fast ways all along: Parse
// reads it without the YAML library, and DecodePod without Starlark values.
func podYAMLWant(doc []byte, limit int64) (pod *corev1.Pod, d *PodDefaults, ok, isFast bool) {
	d0 := stream.NewText("doc.yaml", 0, 1, doc, limit)
	if parsed, err := d0.Parse(); err != nil || !parsed {
		return nil, nil, false, false
	}
	if apiVersion, kind := d0.Kind(); apiVersion != "v1" || kind != "Pod" {
		return nil, nil, false, false
	}
	pod, err := DecodePod(d0.Object)
	if err != nil {
		return nil, nil, false, false
	}
	_, parsed := fast.ParseBlockYAML(doc, limit)
	isFast = parsed && fast.Decode(d0.Object, new(corev1.Pod))
	return pod, PodDefaultsOf(d0.Object), true, isFast
}

// checkPodYAML checks that DecodePodYAML gives for doc exactly what podYAMLWant gives, or
// declines it, and reports whether it took doc and whether it should have: whether podYAMLWant
// reads doc as a pod by its fast ways.
func checkPodYAML(t *testing.T, name string, doc []byte, limit int64) (took, isFast bool) {
	t.Helper()
	got, gotD, took := DecodePodYAML(doc, limit)
	want, wantD, ok, isFast := podYAMLWant(doc, limit)
	if !took {
		return false, isFast
	}
	if !ok {
		t.Errorf("%s: DecodePodYAML takes a document that Parse, DecodePod or the check of its kind refuses:\n%s", name, doc)
		return true, isFast
	}
	if !reflect.DeepEqual(want, got) {
		wantJSON, _ := json.Marshal(want)
		gotJSON, _ := json.Marshal(got)
		t.Errorf("%s: DecodePodYAML gives another pod:\n got %s\nwant %s", name, gotJSON, wantJSON)
	}
	if !reflect.DeepEqual(wantD, gotD) {
		t.Errorf("%s: DecodePodYAML gives other defaults: got %+v, want %+v", name, gotD, wantD)
	}
	return true, isFast
}

// repoDocuments returns the YAML documents of the files under testdata and examples of the
// module, as a stream.Reader splits them.
func repoDocuments(t testing.TB) map[string][]byte {
	t.Helper()
	docs := map[string][]byte{}
	for _, dir := range []string{"testdata", "examples"} {
		err := filepath.WalkDir(filepath.Join("..", "..", dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			r := stream.NewReader(path, bytes.NewReader(data))
			for {
				doc, err := r.NextText()
				if err != nil {
					if !errors.Is(err, io.EOF) {
						break // a file that tests a malformed stream
					}
					return nil
				}
				if raw, _, ok := doc.Text(); ok {
					docs[fmt.Sprintf("%s:%d", path, doc.Line)] = raw
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return docs
}

// TestDecodePodYAMLRepository compares DecodePodYAML with Parse, DecodePod and PodDefaultsOf
// on every YAML document of the repository, and checks that it takes every pod that those
// read by their fast ways.
func TestDecodePodYAMLRepository(t *testing.T) {
	docs := repoDocuments(t)
	took, pods, all := 0, 0, 0
	for name, doc := range docs {
		ok, fast := checkPodYAML(t, name, doc, stream.DefaultMaxDocumentBytes)
		if _, _, isPod, _ := podYAMLWant(doc, stream.DefaultMaxDocumentBytes); isPod {
			all++
		}
		if fast {
			pods++
			if !ok {
				t.Errorf("%s: DecodePodYAML declines a pod that Parse and DecodePod read by their fast ways:\n%s", name, doc)
			}
		}
		if ok {
			took++
		}
	}
	t.Logf("DecodePodYAML took %d of %d documents: of %d pods, the %d that Parse and DecodePod read by their fast ways",
		took, len(docs), all, pods)
	if pods == 0 {
		t.Error("no pod among the documents")
	}
}

// podYAMLCases are pod documents with the forms DecodePodYAML must read as Parse and
// DecodePod do, or decline. Each says whether DecodePodYAML takes it.
var podYAMLCases = []struct {
	name string
	take bool
	doc  string
}{
	{"minimal", true, "apiVersion: v1\nkind: Pod\n"},
	{"not a pod", false, "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n"},
	{"another version", false, "apiVersion: v2\nkind: Pod\n"},
	{"no version", false, "kind: Pod\n"},
	{"quoted kind", false, "apiVersion: v1\nkind: \"Pod\"\n"}, // left to the other path
	{"bool-like strings", true, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: 'yes'\n  labels: {a: 'on', b: \"no\", c: \"true\"}\n"},
	{"bool into a string", false, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: yes\n"},
	{"bool into a label", false, "apiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n    a: on\n"},
	{"number into a string", false, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: 123\n"},
	{"number-like strings", true, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: \"123\"\n  labels:\n    v: 2.4.1-cuda\n    w: '1e3'\n"},
	{"bools", true, "apiVersion: v1\nkind: Pod\nspec:\n  hostNetwork: yes\n  hostPID: Off\n  hostIPC: true\n"},
	{"string into a bool", false, "apiVersion: v1\nkind: Pod\nspec:\n  hostNetwork: \"yes\"\n"},
	{"ints", true, "apiVersion: v1\nkind: Pod\nspec:\n  priority: 10\n  terminationGracePeriodSeconds: 0\n  activeDeadlineSeconds: 123456789012\n"},
	{"int32 overflow", false, "apiVersion: v1\nkind: Pod\nspec:\n  priority: 3000000000\n"},
	{"float into an int", false, "apiVersion: v1\nkind: Pod\nspec:\n  priority: 1.5\n"},
	{"quantities", true, "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    resources:\n      limits: {cpu: 500m, memory: 1Gi, nvidia.com/gpu: 8}\n      requests:\n        cpu: \"2\"\n        memory: 100M\n"},
	{"bad quantity", false, "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    resources:\n      limits: {cpu: lots}\n"},
	{"int-or-string", true, "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    livenessProbe:\n      httpGet: {port: 8080, path: /healthz}\n    readinessProbe:\n      httpGet:\n        port: http\n"},
	{"null values", true, "apiVersion: v1\nkind: Pod\nmetadata:\n  name:\n  labels: null\n  annotations: Null\nspec:\n  containers:\n  -\n  - name: c\n    args:\n    resources:\nstatus:\n"},
	{"null label", true, "apiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n    a:\n    b: null\n"},
	{"tilde", false, "apiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n    a: ~\n"}, // left to the YAML library
	{"empty flow collections", true, "apiVersion: v1\nkind: Pod\nmetadata:\n  labels: {}\nspec:\n  containers:\n  - name: c\n    args: []\n    resources: {}\n  volumes: []\nstatus: {}\n"},
	{"duplicate key", false, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\n"},
	{"duplicate top key", false, "apiVersion: v1\nkind: Pod\nkind: Pod\n"},
	{"duplicate label", false, "apiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n    a: x\n    a: y\n"},
	{"duplicate flow key", false, "apiVersion: v1\nkind: Pod\nmetadata:\n  labels: {a: x, a: y}\n"},
	{"duplicate map key", false, "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    resources:\n      limits:\n        cpu: 1\n        cpu: 2\n"},
	{"unknown field", false, "apiVersion: v1\nkind: Pod\nspec:\n  containerz: []\n"},
	{"unknown top field", false, "apiVersion: v1\nkind: Pod\nextra: 1\n"},
	{"case of a field", false, "apiVersion: v1\nkind: Pod\nMetadata: {}\n"},
	{"list for a map", false, "apiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n  - a\n"},
	{"map for a list", false, "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    name: c\n"},
	{"scalar for a struct", false, "apiVersion: v1\nkind: Pod\nspec: x\n"},
	{"scalar for a list", false, "apiVersion: v1\nkind: Pod\nspec:\n  containers: c\n"},
	{"nested lists of maps", true, "apiVersion: v1\nkind: Pod\nspec:\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions:\n          - key: a\n            operator: In\n            values: [x, \"y\"]\n          -   key: b\n              operator: Exists\n        - matchFields:\n            - key: metadata.name\n              operator: NotIn\n              values:\n              - node1\n"},
	{"comments", true, "# a pod\napiVersion: v1 # the version\nkind: Pod\nmetadata:\n  # its name\n  name: p # here\n\n  labels: {a: b} # c\nspec:\n  containers:\n  # first\n  - name: c # d\n    image: 'i:1' # e\n"},
	{"init and ephemeral containers", true, "apiVersion: v1\nkind: Pod\nspec:\n  initContainers:\n  - name: i\n    resources: {}\n  containers:\n  - resources: {}\n    name: c\n  - name: d\n  - name: c\n  ephemeralContainers:\n  - name: e\n    resources:\n      limits: {cpu: 1}\n  - name: f\n"},
	{"status", true, "apiVersion: v1\nkind: Pod\nstatus:\n  phase: Running\n"},
	{"anchor", false, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: &n p\n  labels: {a: *n}\n"},
	{"block scalar", false, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: |\n    p\n"},
	{"tab", false, "apiVersion: v1\nkind: Pod\nmetadata:\n\tname: p\n"},
	{"second document", false, "apiVersion: v1\nkind: Pod\n...\napiVersion: v1\n"},
	{"bytes", false, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: \xc3\xa9\n"},
	{"indented continuation", false, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n    b\n"},
	{"sequence at the key's column", true, "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    args:\n    - a\n    - \"b c\"\n    command: [sh, --login, 'echo ''hi''']\n  volumes:\n  - name: v\n    emptyDir: {}\n"},
	{"fields of embedded structs", true, "apiVersion: v1\nkind: Pod\nspec:\n  volumes:\n  - name: v\n    hostPath: {path: /x, type: Directory}\n  - name: w\n    configMap:\n      name: m\n      optional: true\n      defaultMode: 420\n"},
	{"managed fields", true, "apiVersion: v1\nkind: Pod\nmetadata:\n  managedFields:\n  - manager: m\n    fieldsType: FieldsV1\n    fieldsV1: {}\n  - manager: mgr2\n    fieldsV1:\n      a: [1, x]\n"},
	{"time", false, "apiVersion: v1\nkind: Pod\nmetadata:\n  creationTimestamp: 2024-01-01T00:00:00Z\n"},
	{"quoted time", true, "apiVersion: v1\nkind: Pod\nmetadata:\n  creationTimestamp: \"2024-01-01T00:00:00Z\"\n"},
}

// TestDecodePodYAMLCases checks DecodePodYAML on podYAMLCases.
func TestDecodePodYAMLCases(t *testing.T) {
	for _, c := range podYAMLCases {
		took, _ := checkPodYAML(t, c.name, []byte(c.doc), stream.DefaultMaxDocumentBytes)
		if took != c.take {
			t.Errorf("%s: DecodePodYAML took it: %v, want %v", c.name, took, c.take)
		}
	}
}

// TestDecodePodYAMLLimit checks that DecodePodYAML takes the training pod at the size Parse
// counts and declines it one byte under, where Parse reports the error.
func TestDecodePodYAMLLimit(t *testing.T) {
	doc := trainingPodYAML(t)
	low, high := int64(0), int64(len(doc))
	if _, _, ok := DecodePodYAML(doc, high); !ok {
		t.Fatalf("DecodePodYAML declines the training pod at a limit of its size, %d", high)
	}
	for low+1 < high { // the least limit it takes
		mid := (low + high) / 2
		if _, _, ok := DecodePodYAML(doc, mid); ok {
			high = mid
		} else {
			low = mid
		}
	}
	for limit, want := range map[int64]bool{high: true, high - 1: false} {
		_, err := stream.NewText("doc.yaml", 0, 1, doc, limit).Parse()
		if (err == nil) != want {
			t.Errorf("limit %d: DecodePodYAML takes it: %v, but Parse's error is %v", limit, want, err)
		}
		checkPodYAML(t, fmt.Sprintf("limit %d", limit), doc, limit)
	}
}

// trainingPodYAML returns the text of the training pod's document.
func trainingPodYAML(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "pods", "training.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// FuzzDecodePodYAML compares DecodePodYAML with Parse, DecodePod and PodDefaultsOf on every
// document it takes.
func FuzzDecodePodYAML(f *testing.F) {
	for _, doc := range repoDocuments(f) {
		f.Add(doc)
	}
	for _, c := range podYAMLCases {
		f.Add([]byte(c.doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if bytes.Count(doc, []byte("\n")) > 300 {
			return
		}
		checkPodYAML(t, "doc", doc, 1<<20) // a limit that stops aliases that expand a lot
	})
}

// BenchmarkDecodePodYAML compares DecodePodYAML with the path it stands in for, Parse and
// DecodePod and PodDefaultsOf, on the training pod's text.
func BenchmarkDecodePodYAML(b *testing.B) {
	doc := trainingPodYAML(b)
	b.Run("text", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, ok := DecodePodYAML(doc, stream.DefaultMaxDocumentBytes); !ok {
				b.Fatal("DecodePodYAML declines the training pod")
			}
		}
	})
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d := stream.NewText("doc.yaml", 0, 1, doc, 0)
			if _, err := d.Parse(); err != nil {
				b.Fatal(err)
			}
			if _, err := DecodePod(d.Object); err != nil {
				b.Fatal(err)
			}
			PodDefaultsOf(d.Object)
		}
	})
}
