package convert

import (
	"bytes"
	"encoding/json"
	"github.com/starpod/starpod/internal/fast"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// readUntyped returns the untyped data of a YAML or JSON text as untypedJSON does, or false
// if the text is neither.
func readUntyped(data []byte) (any, bool) {
	data, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

// slowDecode decodes x into a new value of type typ as the slow path of DecodePod does:
// Decode of the Starlark values of x.
func slowDecode(typ reflect.Type, x any) (reflect.Value, bool) {
	sv, err := FromGo(x)
	if err != nil {
		return reflect.Value{}, false
	}
	out := reflect.New(typ)
	errs, err := Decode(sv, out.Interface(), nil, nil)
	return out, err == nil && len(errs) == 0
}

// checkFast checks that fastDecode of x into a value of type typ declines, or gives what
// the slow path gives; the slow path must succeed where fastDecode does. It reports whether
// fastDecode took x.
func checkFast(t *testing.T, name string, typ reflect.Type, x any) bool {
	t.Helper()
	want, wantOK := slowDecode(typ, x)
	got := reflect.New(typ)
	if !fast.Decode(x, got.Interface()) {
		return false
	}
	if !wantOK {
		t.Errorf("%s: the fast path takes what Decode refuses", name)
		return true
	}
	if !reflect.DeepEqual(want.Interface(), got.Interface()) {
		t.Errorf("%s: the fast path differs from Decode (-want +got):\n%s", name,
			cmp.Diff(want.Interface(), got.Interface(), cmp.Exporter(func(reflect.Type) bool { return true })))
		return true
	}
	wantJSON, wantErr := json.Marshal(want.Interface())
	gotJSON, gotErr := json.Marshal(got.Interface())
	if string(wantJSON) != string(gotJSON) || (wantErr == nil) != (gotErr == nil) {
		t.Errorf("%s: the fast path's JSON differs from Decode's:\n got %s (%v)\nwant %s (%v)", name, gotJSON, gotErr, wantJSON, wantErr)
	}
	return true
}

var podType = reflect.TypeFor[corev1.Pod]()

// checkFastPod checks fastDecode of the pod x as checkFast does, and that DecodePod gives
// what its slow path gives, errors included.
func checkFastPod(t *testing.T, name string, x any) bool {
	t.Helper()
	took := checkFast(t, name, podType, x)
	want, wantErr := decodePodSlow(x)
	got, gotErr := DecodePod(x)
	if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
		t.Errorf("%s: DecodePod error %v, want %v", name, gotErr, wantErr)
	} else if !reflect.DeepEqual(want, got) {
		t.Errorf("%s: DecodePod differs from its slow path", name)
	}
	return took
}

// testdataDocs returns the YAML and JSON documents of the repository's fixtures, goldens and
// examples, and of the archives of the CLI's script tests, by name.
func testdataDocs(t *testing.T) map[string][]byte {
	t.Helper()
	docs := map[string][]byte{}
	addDocs := func(name string, data []byte) {
		if strings.HasSuffix(name, ".json") {
			docs[name] = data
			return
		}
		for i, doc := range splitYAML(data) {
			docs[name+"#"+strconv.Itoa(i)] = doc
		}
	}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "hostile-input", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		inTestdata := strings.Contains(rel, "testdata"+string(filepath.Separator)) || strings.HasPrefix(rel, "examples")
		if !inTestdata {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch ext := filepath.Ext(path); {
		case ext == ".yaml" || ext == ".yml" || ext == ".json":
			addDocs(rel, data)
		case ext == ".txtar":
			for _, f := range txtar.Parse(data).Files {
				switch filepath.Ext(f.Name) {
				case ".yaml", ".yml", ".json":
					addDocs(rel+"/"+f.Name, f.Data)
				}
			}
		case strings.Contains(rel, filepath.Join("testdata", "fuzz")):
			// A fuzz corpus entry: "go test fuzz v1" and one quoted []byte.
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			if len(lines) == 2 && strings.HasPrefix(lines[1], "[]byte(") {
				if s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")")); err == nil {
					docs[rel] = []byte(s)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// splitYAML splits a YAML stream at its "---" lines.
func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	for line := range bytes.Lines(data) {
		if s := strings.TrimRight(string(line), "\r\n"); s == "---" || strings.HasPrefix(s, "--- ") {
			docs = append(docs, cur)
			cur = nil
			continue
		}
		cur = append(cur, line...)
	}
	return append(docs, cur)
}

// TestFastDecodeTestdata checks the fast path against the slow one on every document of the
// repository, and that it takes every valid pod.
func TestFastDecodeTestdata(t *testing.T) {
	var valid, took int
	for name, data := range testdataDocs(t) {
		x, ok := readUntyped(data)
		if !ok {
			continue
		}
		fast := checkFastPod(t, name, x)
		if _, err := decodePodSlow(x); err == nil {
			valid++
			if fast {
				took++
			} else {
				t.Errorf("%s: the fast path declines a valid pod", name)
			}
		}
	}
	if valid < 20 {
		t.Errorf("only %d valid pods in the repository's documents", valid)
	}
	t.Logf("the fast path takes %d of %d valid pods", took, valid)
	if !checkFastPod(t, "training pod", untypedTrainingPod(t)) {
		t.Errorf("the fast path declines the training pod")
	}
}

// fastPodCases are JSON texts of pods, valid or not, for the fast path to take or decline.
var fastPodCases = []string{
	`null`, `{}`, `[]`, `"pod"`, `1`, `true`,
	`{"apiVersion":"v1","kind":"Pod"}`, `{"Kind":"Pod"}`, `{"kind":1}`, `{"extra":1}`, `{"TypeMeta":{}}`,
	`{"metadata":null}`, `{"metadata":{}}`, `{"metadata":[]}`, `{"metadata":"x"}`, `{"metdata":{}}`,
	`{"metadata":{"name":null}}`, `{"metadata":{"name":1}}`, `{"metadata":{"name":true}}`, `{"metadata":{"Name":"x"}}`,
	`{"metadata":{"name":{}}}`, `{"metadata":{"name":"é\n\"\\\u0001\u2028"}}`,
	`{"metadata":{"labels":null}}`, `{"metadata":{"labels":{}}}`, `{"metadata":{"labels":{"a":null}}}`,
	`{"metadata":{"labels":{"a":1}}}`, `{"metadata":{"labels":[]}}`, `{"metadata":{"labels":{"a":"b","":""}}}`,
	`{"metadata":{"finalizers":null}}`, `{"metadata":{"finalizers":[]}}`, `{"metadata":{"finalizers":[null,"a"]}}`,
	`{"metadata":{"finalizers":"a"}}`, `{"metadata":{"finalizers":[["a"]]}}`,
	`{"metadata":{"generation":1}}`, `{"metadata":{"generation":-1}}`, `{"metadata":{"generation":null}}`,
	`{"metadata":{"generation":9223372036854775807}}`, `{"metadata":{"generation":9223372036854775808}}`,
	`{"metadata":{"generation":-9223372036854775809}}`, `{"metadata":{"generation":123456789012345678901234567890}}`,
	`{"metadata":{"generation":1e3}}`, `{"metadata":{"generation":1E3}}`, `{"metadata":{"generation":1.0}}`,
	`{"metadata":{"generation":1.5}}`, `{"metadata":{"generation":"1"}}`, `{"metadata":{"generation":-0}}`,
	`{"metadata":{"generation":1e400}}`, `{"metadata":{"deletionGracePeriodSeconds":30}}`,
	`{"metadata":{"deletionGracePeriodSeconds":null}}`, `{"metadata":{"deletionGracePeriodSeconds":"30"}}`,
	`{"metadata":{"creationTimestamp":null}}`, `{"metadata":{"creationTimestamp":"2026-11-30T14:00:00Z"}}`,
	`{"metadata":{"creationTimestamp":"2026-11-30T14:00:00+02:00"}}`, `{"metadata":{"creationTimestamp":"bad"}}`,
	`{"metadata":{"creationTimestamp":1}}`, `{"metadata":{"creationTimestamp":{}}}`,
	`{"metadata":{"deletionTimestamp":null}}`, `{"metadata":{"deletionTimestamp":"2026-12-01T00:00:00Z"}}`,
	`{"metadata":{"managedFields":[{"manager":"m","time":"2026-12-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:a":{}}}]}}`,
	`{"metadata":{"managedFields":[{"fieldsV1":null}]}}`, `{"metadata":{"managedFields":[{"fieldsV1":"x"}]}}`,
	`{"metadata":{"managedFields":[{"fieldsV1":1.5}]}}`, `{"metadata":{"managedFields":[{"fieldsV1":[1,"a\n"]}]}}`,
	`{"metadata":{"managedFields":[{"fieldsV1":{"f:b":[1,2.5,-3e+30,1e2,1E-7,null,true,false,"s\t"],"f:a":{"z":{},"a":{}}}}]}}`,
	`{"metadata":{"managedFields":[{"fieldsV1":{"a":[1e400]}}]}}`,
	`{"metadata":{"managedFields":[{"fieldsV1":{"a":12345678901234567890123}}]}}`,
	`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Job","name":"j","uid":"u","controller":true}]}}`,
	`{"metadata":{"ownerReferences":[{"controller":"true"}]}}`,
	`{"spec":null}`, `{"spec":[]}`, `{"spec":{"foo":1}}`, `{"spec":{"containers":null}}`, `{"spec":{"containers":[]}}`,
	`{"spec":{"containers":{}}}`, `{"spec":{"containers":["x"]}}`, `{"spec":{"containers":[null]}}`,
	`{"spec":{"containers":[{"name":"c","foo":1}]}}`, `{"spec":{"containers":[{"env":{}}]}}`,
	`{"spec":{"containers":[{"env":[{"name":"A","value":1}]}]}}`, `{"spec":{"containers":[{"env":[{"name":"A","value":null}]}]}}`,
	`{"spec":{"containers":[{"name":"c","ports":[{"containerPort":80}]}]}}`,
	`{"spec":{"containers":[{"name":"c","ports":[{"containerPort":80.5}]}]}}`,
	`{"spec":{"containers":[{"name":"c","ports":[{"containerPort":2147483647}]}]}}`,
	`{"spec":{"containers":[{"name":"c","ports":[{"containerPort":2147483648}]}]}}`,
	`{"spec":{"containers":[{"name":"c","ports":[{"containerPort":-2147483649}]}]}}`,
	`{"spec":{"containers":[{"name":"c","ports":[{"containerPort":8e1}]}]}}`,
	`{"spec":{"terminationGracePeriodSeconds":120,"activeDeadlineSeconds":null,"hostNetwork":true,"enableServiceLinks":false}}`,
	`{"spec":{"hostNetwork":"true"}}`, `{"spec":{"hostNetwork":1}}`, `{"spec":{"hostNetwork":null}}`,
	`{"spec":{"tolerations":[{"key":"k","operator":"Exists","tolerationSeconds":30}]}}`,
	`{"spec":{"securityContext":{"runAsUser":1000,"seLinuxOptions":{"level":"s0"},"sysctls":[{"name":"a","value":"1"}]}}}`,
	`{"spec":{"overhead":{"cpu":"1"}}}`, `{"spec":{"overhead":null}}`, `{"spec":{"overhead":{}}}`, `{"spec":{"overhead":{"cpu":null}}}`,
	`{"spec":{"overhead":[]}}`, `{"spec":{"overhead":"1"}}`,
	`{"spec":{"volumes":[{"name":"v","emptyDir":{"medium":"Memory","sizeLimit":"64Gi"}}]}}`,
	`{"spec":{"volumes":[{"name":"v","emptyDir":{"sizeLimit":null}}]}}`,
	`{"spec":{"volumes":[{"name":"v","secret":{"secretName":"s","defaultMode":420,"items":[{"key":"k","path":"p","mode":256}]}}]}}`,
	`{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"In","values":["a","b"]}]}]}}}}}`,
	`{"status":{"phase":"Running","startTime":"2026-12-01T00:00:00Z","conditions":[{"type":"Ready","status":"True","lastTransitionTime":null}],"containerStatuses":[{"name":"c","ready":true,"restartCount":2,"state":{"running":{"startedAt":"2026-12-01T00:00:01Z"}}}]}}`,
	`{"status":{"conditions":[{"lastTransitionTime":"yesterday"}]}}`, `{"status":{"foo":1}}`,
}

// quantityTexts are the JSON texts of quantities in every form, valid or not.
var quantityTexts = []string{
	`"1"`, `"500m"`, `"1.5"`, `"1Gi"`, `"64Gi"`, `"1e3"`, `"1E3"`, `"1E"`, `"1e-3"`, `"0.1"`, `"+1"`, `"-1"`, `".5"`, `"5."`,
	`" 1Gi "`, `"1Gi\n"`, `"\t2"`, `"\u00a02"`, `"２"`, `""`, `" "`, `"abc"`, `"1e100"`, `"1e101"`, `"1e-101"`,
	`"9e2147483647"`, `"1e99999999999999999999"`, `"1234567890123456789012345678901234567890123456789012345678901234"`,
	`"12345678901234567890123456789012345678901234567890123456789012345"`, `"1\"Gi"`, `"1\\Gi"`, `"1Ki"`, `"1k"`, `"1K"`,
	`"100Mi"`, `"0"`, `"-0"`, `"0.000000001"`, `"1n"`, `"1u"`, `"9223372036854775807"`, `"9223372036854775808"`,
	`1`, `0`, `-1`, `1.5`, `1e3`, `1E3`, `1.0`, `1e-3`, `0.1`, `1e100`, `1e101`, `1e400`, `12345678901234567890`,
	`9223372036854775807`, `-0`, `-0.0`, `null`, `true`, `false`, `{}`, `[]`, `["1"]`, `{"a":"1"}`,
}

// intOrStringTexts are the JSON texts of IntOrStrings in every form, valid or not.
var intOrStringTexts = []string{
	`8080`, `0`, `-1`, `"http"`, `"8080"`, `""`, `"é\n"`, `null`, `1.5`, `1.0`, `1e3`, `2147483647`, `2147483648`,
	`-2147483648`, `-2147483649`, `12345678901234567890`, `true`, `{}`, `[]`, `[80]`,
}

func TestFastDecodeCases(t *testing.T) {
	cases := slices.Clone(fastPodCases)
	for _, q := range quantityTexts {
		cases = append(cases,
			`{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":`+q+`},"requests":{"memory":`+q+`}}}]}}`,
			`{"spec":{"volumes":[{"name":"v","emptyDir":{"sizeLimit":`+q+`}}]}}`)
	}
	for _, p := range intOrStringTexts {
		cases = append(cases,
			`{"spec":{"containers":[{"name":"c","livenessProbe":{"httpGet":{"port":`+p+`}}}]}}`,
			`{"spec":{"containers":[{"name":"c","readinessProbe":{"tcpSocket":{"port":`+p+`}}}]}}`)
	}
	for _, c := range cases {
		x, ok := readUntyped([]byte(c))
		if !ok {
			t.Fatalf("bad case %s", c)
		}
		took := checkFastPod(t, c, x)
		if _, err := decodePodSlow(x); err == nil && !took && !strings.Contains(c, "12345678901234567890") {
			// Only ints beyond int64 (in a quantity) are left to the slow path.
			t.Errorf("%s: the fast path declines a valid pod", c)
		}
	}
}

// TestFastDecodeGoData checks the fast path on untyped data that JSON text does not give:
// invalid UTF-8, numbers that are not JSON numbers, and Go values outside the data model.
func TestFastDecodeGoData(t *testing.T) {
	bad := "a\xffb"
	for i, x := range []any{
		map[string]any{"metadata": map[string]any{"name": bad}},
		map[string]any{"metadata": map[string]any{"labels": map[string]any{bad: bad}}},
		map[string]any{"metadata": map[string]any{"generation": int64(1)}},
		map[string]any{"metadata": map[string]any{"generation": 1.0}},
		map[string]any{"metadata": map[string]any{"generation": json.Number("+5")}},
		map[string]any{"metadata": map[string]any{"generation": json.Number("007")}},
		map[string]any{"metadata": map[string]any{"generation": json.Number("abc")}},
		map[string]any{"metadata": map[string]any{"generation": json.Number("0x10")}},
		map[string]any{"metadata": map[string]any{"generation": json.Number("1_000")}},
		map[string]any{"metadata": map[string]any{"generation": json.Number("NaN")}},
		map[string]any{"metadata": map[string]any{"generation": json.Number("")}},
		map[string]any{"metadata": map[string]any{"creationTimestamp": bad}},
		map[string]any{"metadata": map[string]any{"name": []string{"x"}}},
		map[string]any{"metadata": map[string]any{"managedFields": []any{map[string]any{"fieldsV1": map[string]any{bad: json.Number("0x1.8p1")}}}}},
		map[string]any{"metadata": map[string]any{"managedFields": []any{map[string]any{"fieldsV1": map[string]any{"a": json.Number("Inf")}}}}},
		map[string]any{"metadata": map[string]any{"managedFields": []any{map[string]any{"fieldsV1": map[string]any{"a": json.Number("+Inf.0")}}}}},
		map[string]any{"metadata": map[string]any{"managedFields": []any{map[string]any{"fieldsV1": map[string]any{"a": int64(1)}}}}},
		map[string]any{"spec": map[string]any{"overhead": map[string]any{"cpu": json.Number("0x1.8p1")}}},
		map[string]any{"spec": map[string]any{"overhead": map[string]any{"cpu": json.Number("+5")}}},
		map[string]any{"spec": map[string]any{"overhead": map[string]any{"cpu": "1\xff"}}},
		map[string]any{"spec": map[string]any{"overhead": map[string]any{"cpu": 1.5}}},
		map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"livenessProbe": map[string]any{"httpGet": map[string]any{"port": bad}}}}}},
		map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"livenessProbe": map[string]any{"httpGet": map[string]any{"port": json.Number("+80")}}}}}},
		map[string]any{"spec": map[string]any{"containers": []map[string]any{{"name": "c"}}}},
		map[string]string{"kind": "Pod"},
		int64(1),
	} {
		checkFastPod(t, "Go data "+strconv.Itoa(i), x)
	}
}

type fastEmbedded struct {
	E string `json:"e"`
}

type FastEmbeddedPtr struct {
	P int `json:"p"`
}

type fastHidden struct {
	H int `json:"h"`
}

// fastProbe has a field of each kind the fast path takes or declines.
type fastProbe struct {
	B        []byte                         `json:"b"`
	F        float64                        `json:"f"`
	F32      float32                        `json:"f32"`
	U        uint16                         `json:"u"`
	I8       int8                           `json:"i8"`
	Any      any                            `json:"any"`
	Arr      [2]int                         `json:"arr"`
	QS       string                         `json:"qs,string"`
	QN       int                            `json:"qn,string"`
	T        metav1.Time                    `json:"t"`
	TP       *metav1.Time                   `json:"tp"`
	MT       metav1.MicroTime               `json:"mt"`
	Dur      metav1.Duration                `json:"dur"`
	IM       map[int]string                 `json:"im"`
	QM       map[string]resource.Quantity   `json:"qm"`
	RM       map[corev1.ResourceName]string `json:"rm"`
	IS       []intstr.IntOrString           `json:"is"`
	PP       **string                       `json:"pp"`
	Rec      *fastProbe                     `json:"rec"`
	Untagged string
	fastEmbedded
	*FastEmbeddedPtr
}

type fastHiddenProbe struct {
	*fastHidden
}

func TestFastDecodeTypes(t *testing.T) {
	for _, c := range []string{
		`{"b":"aGVsbG8="}`, `{"b":""}`, `{"b":null}`, `{"b":"!!"}`, `{"b":"aGVsbG8"}`, `{"b":[104,105]}`, `{"b":1}`,
		`{"f":1}`, `{"f":1.5}`, `{"f":-0.0}`, `{"f":1e308}`, `{"f":1e309}`, `{"f":9007199254740993}`, `{"f":null}`, `{"f":"1"}`,
		`{"f32":1.1}`, `{"u":1}`, `{"u":-1}`, `{"i8":127}`, `{"i8":128}`, `{"i8":-129}`, `{"any":{"a":[1,2.5]}}`, `{"any":null}`,
		`{"arr":[1,2]}`, `{"qs":"\"x\""}`, `{"qn":"1"}`, `{"qs":null}`,
		`{"t":"2026-11-30T14:00:00Z"}`, `{"t":null}`, `{"tp":null}`, `{"tp":"2026-11-30T14:00:00.5Z"}`, `{"t":"bad"}`,
		`{"mt":"2026-11-30T14:00:00.123456Z"}`, `{"mt":null}`, `{"dur":"1m"}`, `{"dur":"x"}`, `{"dur":60}`,
		`{"im":{"1":"a"}}`, `{"im":null}`, `{"qm":{"a":"1Gi","b":null,"c":1.5}}`, `{"qm":{"a":"x"}}`, `{"rm":{"cpu":"x"}}`,
		`{"rm":{"cpu":1}}`, `{"is":[1,"a",null]}`, `{"is":[1.5]}`,
		`{"pp":"x"}`, `{"pp":null}`, `{"rec":{"rec":{"e":"x","p":1}}}`, `{"rec":null}`, `{"rec":{"x":1}}`,
		`{"Untagged":"x"}`, `{"untagged":"x"}`, `{"e":"x"}`, `{"p":1}`, `{"p":null}`, `{"fastEmbedded":{}}`,
		`{"FastEmbeddedPtr":{}}`, `{}`, `null`, `[]`,
	} {
		x, ok := readUntyped([]byte(c))
		if !ok {
			t.Fatalf("bad case %s", c)
		}
		checkFast(t, c, reflect.TypeFor[fastProbe](), x)
		checkFast(t, c, reflect.TypeFor[fastHiddenProbe](), x)
	}
	if x, _ := readUntyped([]byte(`{"h":1}`)); fast.Decode(x, new(fastHiddenProbe)) {
		t.Errorf("the fast path sets an embedded pointer to an unexported struct")
	}
}

// FuzzDecodePodFast checks that the fast path of DecodePod declines the untyped data of any
// YAML or JSON text, or gives the pod the slow path gives, and declines what the slow path
// refuses.
func FuzzDecodePodFast(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	for _, c := range fastPodCases {
		f.Add([]byte(c))
	}
	for _, q := range quantityTexts {
		f.Add([]byte(`{"spec":{"overhead":{"cpu":` + q + `}}}`))
	}
	for _, p := range intOrStringTexts {
		f.Add([]byte(`{"spec":{"containers":[{"livenessProbe":{"httpGet":{"port":` + p + `}}}]}}`))
	}
	training, err := os.ReadFile(filepath.Join("..", "..", "testdata", "pods", "training.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(training)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		x, ok := readUntyped(data)
		if !ok {
			return
		}
		checkFastPod(t, "pod", x)
	})
}
