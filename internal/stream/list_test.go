package stream

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/starpod/starpod/internal/bound"
)

// listParts reads text with ListItems and returns each part: its kind, line and text.
func listParts(t *testing.T, max int64, text string) ([]string, error) {
	t.Helper()
	r := ReaderOptions{MaxDocumentBytes: max, ListItems: true}.NewReader("in.yaml", strings.NewReader(text))
	var got []string
	for {
		d, err := r.NextText()
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, fmt.Sprintf("%d %d:%d %q", d.Part, d.Index, d.Line, d.Raw))
	}
}

// podList returns a v1 List of n pods as kubectl get -o yaml prints it.
func podList(n int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nitems:\n")
	for i := range n {
		fmt.Fprintf(&b, "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p%d\n", i)
	}
	b.WriteString("kind: List\nmetadata:\n  resourceVersion: \"\"\n")
	return b.String()
}

// TestListItems checks that a List larger than the limit of a document is read item by item,
// each item unindented with the line it starts on, and the text around them in two parts;
// that the documents around it are read as before; and that a List within the limit stays
// one document.
func TestListItems(t *testing.T) {
	item := func(i int) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p%d\n", i)
	}
	text := "kind: Before\n---\n" + podList(4) + "---\nkind: After\n"
	got, err := listParts(t, 100, text)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("0 0:1 %q", "kind: Before\n"),
		fmt.Sprintf("1 1:3 %q", "apiVersion: v1\nitems:\n"),
		fmt.Sprintf("2 2:5 %q", item(0)),
		fmt.Sprintf("2 3:9 %q", item(1)),
		fmt.Sprintf("2 4:13 %q", item(2)),
		fmt.Sprintf("2 5:17 %q", item(3)),
		fmt.Sprintf("3 6:3 %q", "kind: List\nmetadata:\n  resourceVersion: \"\"\n"),
		fmt.Sprintf("0 7:25 %q", "kind: After\n"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
	// Within the limit, a List is one document.
	if got, err := listParts(t, 1<<20, podList(4)); err != nil || len(got) != 1 || !strings.HasPrefix(got[0], "0 ") {
		t.Errorf("a List within the limit: got %q, %v; want one whole document", got, err)
	}
}

// TestListItemsLimits checks that each item of a List read item by item is bounded, that a
// document over the limit that is not a v1 List is refused, and that without ListItems a List
// over the limit is refused as any document.
func TestListItemsLimits(t *testing.T) {
	big := "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: " + strings.Repeat("x", 200) + "\nkind: List\n"
	_, err := listParts(t, 100, big)
	var size *bound.SizeError
	if !errors.As(err, &size) || !strings.Contains(err.Error(), "in.yaml:3: item 1 of the List: the document is larger than the limit of 100") {
		t.Errorf("an item over the limit: got %v, want its size error at line 3", err)
	}
	notList := strings.Replace(podList(4), "kind: List", "kind: Other", 1)
	_, err = listParts(t, 100, notList)
	if !errors.As(err, &size) || !strings.Contains(err.Error(), "only a v1 List is read item by item") {
		t.Errorf("a document over the limit that is no List: got %v, want a size error", err)
	}
	r := ReaderOptions{MaxDocumentBytes: 100}.NewReader("in.yaml", strings.NewReader(podList(4)))
	if _, err := r.NextText(); !errors.As(err, &size) {
		t.Errorf("without ListItems: got %v, want a size error", err)
	}
}
