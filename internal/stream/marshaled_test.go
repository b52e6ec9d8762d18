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
