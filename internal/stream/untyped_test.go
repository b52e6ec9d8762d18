package stream

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// viaJSON is what yamlToUntyped replaces: YAML to JSON text, and the text decoded.
func viaJSON(doc []byte) (any, error) {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// untypedCases are documents whose scalars, keys and errors cover every case of jsonable.
var untypedCases = []string{
	"a: 1\nb: -2\nc: 9223372036854775807\nd: 18446744073709551615\ne: 99999999999999999999\n",
	"f: 1.5\ng: 1e21\nh: 1e-7\ni: 0.000001\nj: -0.0\nk: 0x1F\nl: 0o17\nm: 1_000\nn: 6.02e+23\n",
	"yes: on\nno: off\nt: true\nnil: ~\nempty:\nq: \"yes\"\n",
	"1: a\n2.5: b\ntrue: c\n-3: d\n1e40: e\n",
	".inf: x\n",
	"x: .inf\n",
	"x: .nan\n",
	"x: -.inf\n",
	"{[a]: b}\n",
	"? {a: b}\n: c\n",
	"~: x\n",
	"a: 1\na: 2\n",
	"s: \"\\xff\\u00e9 <&>\"\nt: !!binary aGVsbG8=\nu: 2001-12-14t21:59:43.10-05:00\nv: 2002-12-14\n",
	"base: &b {x: 1, y: [1, 2]}\nderived:\n  <<: *b\n  z: 3\n",
	"list:\n- a\n- [1, 2.0, null]\n- {k: v}\n",
	"e: []\nf: {}\ng: [[], {}]\n",
	"a: [1, 2\n",
	"a:\n  b: 1\n   c: 2\n",
	"- 1\n- two\n",
	"plain",
	"42",
	"null",
	"a: !!str 12\nb: !!int '12'\nc: !!float 3\n",
}

func TestYAMLToUntypedSameAsJSON(t *testing.T) {
	for _, doc := range untypedCases {
		want, wantErr := viaJSON([]byte(doc))
		got, err := yamlToUntyped([]byte(doc), math.MaxInt64)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Errorf("%q: got error %v, want %v", doc, err, wantErr)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q: (-want +got)\n%s", doc, diff)
		}
	}
}
