package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/randfill"
	"sigs.k8s.io/yaml"

	"github.com/starpod/starpod/internal/stream"
)

// A fixturePod is a pod of the repository's test data, with the untyped data of its
// document.
type fixturePod struct {
	name string
	doc  any
	pod  *corev1.Pod
}

// fixturePods returns the pods of the shared test data, of the examples' inputs and
// expected outputs, and of the CLI's script tests.
func fixturePods(t testing.TB) []fixturePod {
	t.Helper()
	root := filepath.Join("..", "..")
	var pods []fixturePod
	add := func(name string, text []byte) {
		for i, doc := range bytes.Split(text, []byte("\n---")) {
			data, err := yaml.YAMLToJSON(doc)
			if err != nil {
				continue
			}
			var untyped map[string]any
			if json.Unmarshal(data, &untyped) != nil || untyped == nil {
				continue
			}
			if kind, _ := untyped["kind"].(string); kind != "Pod" {
				continue
			}
			pod := new(corev1.Pod)
			if strictUnmarshal(data, pod) != nil {
				continue
			}
			pods = append(pods, fixturePod{fmt.Sprintf("%s#%d", name, i), untyped, pod})
		}
	}
	var files []string
	for _, pattern := range []string{"testdata/pods/*.yaml", "examples/*/*.yaml", "examples/*/*/*.yaml"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		add(file, data)
	}
	scripts, err := filepath.Glob(filepath.Join(root, "cmd", "starpod", "testdata", "script", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, script := range scripts {
		ar, err := txtar.ParseFile(script)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ar.Files {
			if strings.HasSuffix(f.Name, ".yaml") || strings.HasSuffix(f.Name, ".yml") {
				add(script+":"+f.Name, f.Data)
			}
		}
	}
	if len(pods) < 20 {
		t.Fatalf("found %d pods in the test data, want many more", len(pods))
	}
	return pods
}

// defaultsOf returns the PodDefaults to print pod with: none, those of its document, those
// of an empty document (which remove every default), and those of a document that held
// every default.
func defaultsOf(pod *corev1.Pod, doc any) map[string]*PodDefaults {
	all := &PodDefaults{status: true, resources: make(map[string]bool)}
	for _, c := range pod.Spec.InitContainers {
		all.resources["initContainers/"+c.Name] = true
	}
	for _, c := range pod.Spec.Containers {
		all.resources["containers/"+c.Name] = true
	}
	for _, c := range pod.Spec.EphemeralContainers {
		all.resources["ephemeralContainers/"+c.Name] = true
	}
	return map[string]*PodDefaults{
		"nil":      nil,
		"document": PodDefaultsOf(doc),
		"empty":    PodDefaultsOf(map[string]any{}),
		"all":      all,
	}
}

// checkTypedYAML checks that stream.MarshalTypedYAML prints pod as the JSON path of
// MarshalYAML does, with each of the defaults of defaultsOf. It reports whether the typed
// printer printed the pod, rather than declining it.
func checkTypedYAML(t *testing.T, name string, pod *corev1.Pod, doc any) bool {
	t.Helper()
	printed := true
	for dname, d := range defaultsOf(pod, doc) {
		want, wantErr := d.marshalJSONYAML(pod)
		got, ok := stream.MarshalTypedYAML(pod, d.omitted(pod)...)
		if !ok {
			printed = false
			continue
		}
		if wantErr != nil {
			t.Errorf("%s, defaults %s: the JSON path fails (%v), the typed printer prints", name, dname, wantErr)
			continue
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s, defaults %s: (-want +got)\n%s", name, dname, diff)
		}
	}
	checkPrunedYAML(t, name, pod)
	return printed
}

// checkPrunedYAML checks that YAMLOptions.MarshalTypedYAML prints pod, pruned, as
// YAMLOptions.JSONToYAML prints its JSON text, if it prints it; that stream.JSONSize counts
// the length of that text, if it counts it; and that YAMLOptions.MarshalTypedYAMLSize prints
// what MarshalTypedYAML prints and counts that length too.
func checkPrunedYAML(t *testing.T, name string, pod *corev1.Pod) {
	t.Helper()
	data, jerr := json.Marshal(pod)
	if size, ok := stream.JSONSize(pod); ok && (jerr != nil || size != int64(len(data))) {
		t.Errorf("%s: JSONSize counts %d, json.Marshal gives %d bytes, error %v", name, size, len(data), jerr)
	}
	opts := stream.YAMLOptions{Prune: true}
	got, ok := opts.MarshalTypedYAML(pod)
	sized, size, sizedOK := opts.MarshalTypedYAMLSize(pod)
	if sizedOK != ok || string(sized) != string(got) {
		t.Errorf("%s: MarshalTypedYAMLSize prints %q (%v), MarshalTypedYAML %q (%v)", name, sized, sizedOK, got, ok)
	}
	if !ok {
		return
	}
	if jerr == nil && size != int64(len(data)) {
		t.Errorf("%s: MarshalTypedYAMLSize counts %d, json.Marshal gives %d bytes", name, size, len(data))
	}
	if jerr != nil {
		t.Errorf("%s: json.Marshal fails (%v), the typed printer prints it pruned", name, jerr)
		return
	}
	want, err := opts.JSONToYAML(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s, pruned: (-want +got)\n%s", name, diff)
	}
}

// TestTypedYAML checks that printing a pod straight from its fields gives the text of
// printing its JSON text, for the pods of the test data and for random pods.
func TestTypedYAML(t *testing.T) {
	for _, fp := range fixturePods(t) {
		if !checkTypedYAML(t, fp.name, fp.pod, fp.doc) {
			t.Errorf("%s: the typed printer declines it", fp.name)
		}
	}
	for name, pod := range map[string]*corev1.Pod{"training": trainingPod(t), "rich": richPod(), "empty": {}} {
		if !checkTypedYAML(t, name, pod, map[string]any{}) {
			t.Errorf("%s: the typed printer declines it", name)
		}
	}
	n := typedRandomPods
	if testing.Short() {
		n = min(n, 50)
	}
	declined := 0
	f := typedFiller(randfill.NewWithSeed(7))
	for i := range n {
		pod := new(corev1.Pod)
		f.Fill(pod)
		if !checkTypedYAML(t, fmt.Sprintf("random pod %d", i), pod, map[string]any{}) {
			declined++
		}
	}
	t.Logf("the typed printer declined %d of %d random pods", declined, n)
	if declined > n/10 {
		t.Errorf("the typed printer declined %d of %d random pods, want at most a tenth", declined, n)
	}
}

// TestTypedYAMLFallback checks that MarshalYAML prints through the JSON text what the
// typed printer declines: here a key the YAML library may print otherwise.
func TestTypedYAMLFallback(t *testing.T) {
	pod := trainingPod(t)
	pod.Labels["é"] = "x"
	d := PodDefaultsOf(map[string]any{})
	if _, ok := stream.MarshalTypedYAML(pod, d.omitted(pod)...); ok {
		t.Fatal("the typed printer prints a key that is not ASCII")
	}
	want, err := d.marshalJSONYAML(pod)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.MarshalYAML(pod)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// FuzzTypedYAML checks that printing a pod straight from its fields gives the text of
// printing its JSON text, for pods decoded from the fuzzer's JSON text. (TestTypedYAML
// checks pods filled at random, which cost too much to fill many.)
func FuzzTypedYAML(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	f.Add([]byte(`{"spec":{"containers":[{"name":"a","resources":{}},{"name":"b"}]},"status":{}}`))
	f.Add([]byte(`{"metadata":{"annotations":{"a":"1.5","b":"yes","c":"x: y","d":"` + strings.Repeat("long text ", 12) + `"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var doc any
		pod := new(corev1.Pod)
		if json.Unmarshal(data, &doc) != nil || strictUnmarshal(data, pod) != nil {
			return
		}
		checkTypedYAML(t, "decoded pod", pod, doc)
	})
}

// typedStrings are strings that print in different ways as YAML scalars: plain, quoted
// because they read as something else, folded when long, or by the YAML library.
var typedStrings = []string{
	"", "a", "nginx", "app.kubernetes.io/name", "yes", "No", "on", "null", "~", "true", "1", "1.5",
	"0x1F", "1e3", "-", "-a", "a b", "a: b", "a:", "#c", "x #c", "'q'", `"dq"`, "[a]", "{a}", "*a",
	"&a", "!a", "%a", "@a", "`a", "a,b", " lead", "trail ", "1Gi", "500m", "a1", "a01", "a10", "a1b",
	"key=value", strings.Repeat("word ", 20), strings.Repeat("x", 130),
	"line\nbreak", "tab\there", "é", "caf\u00e9 \u2028", "\u0085", "ends with blank lines\n\n",
}

// typedFiller sets up f to fill pods for the typed printer: as podFiller, with strings from
// typedStrings, and map keys from those the YAML library prints as simple keys, which the
// printer does not decline.
func typedFiller(f *randfill.Filler) *randfill.Filler {
	str := func(c randfill.Continue) string {
		if c.Intn(100) == 0 {
			return c.String(0)
		}
		return typedStrings[c.Intn(len(typedStrings))]
	}
	key := func(c randfill.Continue) string {
		return typedStrings[c.Intn(len(typedStrings)-8)] // not too long, printable ASCII
	}
	return podFiller(f).Funcs(
		func(s *string, c randfill.Continue) { *s = str(c) },
		func(s *corev1.ResourceName, c randfill.Continue) { *s = corev1.ResourceName(key(c)) },
		func(m *map[string]string, c randfill.Continue) {
			if c.Intn(5) == 0 {
				*m = nil
				return
			}
			*m = make(map[string]string)
			for range c.Intn(4) {
				(*m)[key(c)] = str(c)
			}
		},
	)
}

// gpuPod returns the training pod as the overlay of examples/gpu-tolerations changes it,
// and the defaults of its document.
func gpuPod(b *testing.B) (*corev1.Pod, *PodDefaults) {
	pod := trainingPod(b)
	pod.Spec.NodeSelector["cloud.example.com/pool"] = "gpu-a100"
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
		Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
	})
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "pods", "training.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		b.Fatal(err)
	}
	return pod, PodDefaultsOf(doc)
}

// BenchmarkMarshalYAML prints the changed training pod through its JSON text and straight
// from its fields.
func BenchmarkMarshalYAML(b *testing.B) {
	pod, d := gpuPod(b)
	want, err := d.marshalJSONYAML(pod)
	if err != nil {
		b.Fatal(err)
	}
	if _, ok := stream.MarshalTypedYAML(pod, d.omitted(pod)...); !ok {
		b.Fatal("the typed printer declines the pod")
	}
	for _, bc := range []struct {
		name    string
		marshal func(*corev1.Pod) ([]byte, error)
	}{
		{"json", d.marshalJSONYAML},
		{"typed", d.MarshalYAML},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if got, err := bc.marshal(pod); err != nil || !bytes.Equal(got, want) {
				b.Fatalf("got %v, want the text of the JSON path:\n%s", err, cmp.Diff(string(want), string(got)))
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.marshal(pod); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
