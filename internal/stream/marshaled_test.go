package stream

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeMarshaled(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 1000 {
		data, err := json.Marshal(randomValue(r, 4))
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		got, err := DecodeMarshaled(data)
		if err != nil {
			t.Fatalf("DecodeMarshaled(%s): %v", data, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("DecodeMarshaled(%s): (-want +got)\n%s", data, diff)
		}
	}
	// Text json.Marshal does not write goes to encoding/json.
	got, err := DecodeMarshaled([]byte(`{ "a": [1, 2] }`))
	if err != nil || !cmp.Equal(got, map[string]any{"a": []any{json.Number("1"), json.Number("2")}}) {
		t.Errorf("DecodeMarshaled with spaces: got %v, %v", got, err)
	}
	if _, err := DecodeMarshaled([]byte(`{"a"}`)); err == nil {
		t.Error("DecodeMarshaled of bad text: no error")
	}
}

func TestMarshalUntypedYAMLSameAsMarshalYAML(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	values := []any{
		map[string]any{"a": "\xff", "b": json.Number("1")},
		map[string]any{"\xfe": "a"},
		map[string]any{"a": int64(3), "b": 2.5, "c": []any{float32(1)}},
		map[string]any{"a": json.Number("1.5e3"), "b": "<&>"},
		map[string]any{},
		[]any{"a"},
		"a",
	}
	for range 5000 {
		values = append(values, map[string]any{randomString(r): randomValue(r, 4), "k": randomValue(r, 4)})
	}
	for _, v := range values {
		want, wantErr := MarshalYAML(v)
		got, err := MarshalUntypedYAML(v)
		if (err != nil) != (wantErr != nil) || string(got) != string(want) {
			t.Fatalf("MarshalUntypedYAML(%#v):\n%s (%v)\nwant\n%s (%v)", v, got, err, want, wantErr)
		}
	}
}
