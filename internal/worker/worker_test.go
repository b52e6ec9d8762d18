package worker_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/starpod/starpod/internal/sandbox"
	"github.com/starpod/starpod/internal/worker"
)

func TestFields(t *testing.T) {
	b := worker.AppendString(nil, 1, "name")
	b = worker.AppendBytes(b, 2, nil)
	b = worker.AppendInt(b, 3, -7)
	b = worker.AppendUint(b, 4, 1<<40)
	b = worker.AppendBool(b, 5, true)
	b = append(b, 0x35, 1, 2, 3, 4) // field 6 of type fixed32: skipped
	b = worker.AppendBytes(b, 7, worker.AppendString(nil, 1, "inner"))
	var got []string
	err := worker.Fields(b, func(f worker.Field) error {
		switch f.Num {
		case 1, 2:
			got = append(got, f.String())
		case 3:
			got = append(got, string(rune('0'-f.Int())))
		case 4:
			got = append(got, map[bool]string{true: "big"}[f.V == 1<<40])
		case 5:
			got = append(got, map[bool]string{true: "true"}[f.Bool()])
		case 6:
			t.Errorf("got field 6, want it skipped")
		case 7:
			return worker.Fields(f.B, func(f worker.Field) error {
				got = append(got, f.String())
				return nil
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "name,,7,big,true,inner"; strings.Join(got, ",") != want {
		t.Errorf("got %q, want %q", strings.Join(got, ","), want)
	}
	for n := 1; n < len(b); n++ {
		worker.Fields(b[:n], func(worker.Field) error { return nil }) // no panic
	}
	if err := worker.Fields([]byte{0x0a, 5, 'a'}, func(worker.Field) error { return nil }); !errors.Is(err, worker.ErrMalformed) {
		t.Errorf("a cut field: got %v, want ErrMalformed", err)
	}
}

// TestServe checks that a worker dispatches each request to the handler of its kind, with
// state the handlers share, and stops at a kind it has no handler for.
func TestServe(t *testing.T) {
	calls := 0
	p := &worker.Protocol{Name: "test/1", Handlers: func(c *worker.Conn) map[byte]worker.Handler {
		n := 0 // shared by the handlers of one worker
		return map[byte]worker.Handler{
			'a': func(body []byte) error {
				n++
				calls++
				return sandbox.WriteFrame(c.Out, 'r', body, []byte{byte('0' + n)})
			},
		}
	}}
	frames := func(kindsAndBodies ...string) []byte {
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		for i := 0; i < len(kindsAndBodies); i += 2 {
			sandbox.WriteFrame(w, kindsAndBodies[i][0], []byte(kindsAndBodies[i+1]))
		}
		w.Flush()
		return buf.Bytes()
	}
	hello := frames(string(sandbox.FrameHello), "test/1")
	var out bytes.Buffer
	if err := worker.ServeOn(bytes.NewReader(append(hello, frames("a", "x", "a", "y")...)), &out, p); err != nil {
		t.Fatal(err)
	}
	r := sandbox.NewFrameReader(&out)
	var got []string
	for {
		kind, body, err := r.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(kind)+string(body))
	}
	if want := string(sandbox.FrameReady) + "test/1,rx1,ry2"; strings.Join(got, ",") != want || calls != 2 {
		t.Errorf("got %q after %d calls, want %q after 2", strings.Join(got, ","), calls, want)
	}
	err := worker.ServeOn(bytes.NewReader(append(hello, frames("z", "")...)), io.Discard, p)
	if err == nil || !strings.Contains(err.Error(), `got a frame of kind 'z', want a request`) {
		t.Errorf("an unknown request: got %v, want an error naming it", err)
	}
}
