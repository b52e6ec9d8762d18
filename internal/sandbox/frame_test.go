package sandbox

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"
)

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	big := bytes.Repeat([]byte("x"), 100<<10) // larger than the reader's buffer
	frames := []struct {
		kind byte
		body []byte
	}{{FrameHello, []byte(testProtocol)}, {'E', nil}, {'P', big}, {'r', []byte("abc")}}
	for _, f := range frames {
		if err := WriteFrame(w, f.kind, f.body[:len(f.body)/2], f.body[len(f.body)/2:]); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	data := buf.Bytes()
	r := NewFrameReader(bytes.NewReader(data))
	for i, f := range frames {
		kind, body, err := r.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if kind != f.kind || !bytes.Equal(body, f.body) {
			t.Errorf("frame %d: got kind %q and %d bytes, want %q and %d", i, kind, len(body), f.kind, len(f.body))
		}
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Errorf("at the end: got %v, want io.EOF", err)
	}
	// Cut anywhere but between frames, the input is an unexpected end.
	for _, n := range []int{1, 4, 5, 5 + len(testProtocol) - 1, 5 + len(testProtocol) + 5 + 5 + 50000, len(data) - 1} {
		r := NewFrameReader(bytes.NewReader(data[:n]))
		var err error
		for err == nil {
			_, _, err = r.Next()
		}
		if err != io.ErrUnexpectedEOF {
			t.Errorf("cut at %d bytes: got %v, want io.ErrUnexpectedEOF", n, err)
		}
	}
	r = NewFrameReader(strings.NewReader("this is not a frame"))
	if _, _, err := r.Next(); err == nil || !strings.Contains(err.Error(), "exceeds the limit") {
		t.Errorf("garbage: got %v, want a frame that exceeds the limit", err)
	}
}

func TestScriptCache(t *testing.T) {
	c := NewCache[int](16)
	for i := range 16 {
		c.Add(strconv.Itoa(i), i)
	}
	c.Use("0")       // "1" is now the least recently used
	c.Add("1", 100)  // and now "2"
	c.Use("unknown") // changes nothing
	c.Add("new", -1) // forgets "2"
	if c.Len() != 16 {
		t.Errorf("len = %d, want %d", c.Len(), 16)
	}
	for key, want := range map[string]int{"0": 0, "1": 100, "3": 3, "new": -1} {
		if v, ok := c.Get(key); !ok || v != want {
			t.Errorf("get(%q) = %d, %v, want %d, true", key, v, ok, want)
		}
	}
	if _, ok := c.Get("2"); ok {
		t.Errorf("get(\"2\"): the least recently used script is still there")
	}
}
