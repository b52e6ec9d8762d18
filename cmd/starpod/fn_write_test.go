package main

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
)

// listHead is the start of the ResourceLists of these tests.
const listHead = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"

// writeCases are ResourceLists whose items writeResourceList writes one by one, and some
// it leaves to kyaml's writer (comments, anchors, items that are not mappings).
var writeCases = []string{
	// Two pods, the functionConfig and kyaml's reader annotations.
	listHead + `- apiVersion: v1
  kind: Pod
  metadata:
    name: a
    annotations:
      config.kubernetes.io/index: '0'
  spec:
    containers:
    - name: main
      image: busybox
      args: ["-c", "echo hi"]
      env: [{name: A, value: "1"}, {name: B}]
      ports:
        - containerPort: 80
- apiVersion: v1
  kind: Pod
  metadata: {name: b, labels: {x: "y"}}
  spec: {}
functionConfig:
  apiVersion: v1
  kind: ConfigMap
  metadata: {name: cfg}
  data: {k: v}
`,
	// Block scalars: empty lines, lines of spaces, a leading space, keep and strip chomping.
	listHead + `- apiVersion: v1
  kind: ConfigMap
  metadata: {name: text}
  data:
    script: |
      #!/bin/sh

      echo "a"
          indented

      done
    lead: "  starts with spaces\nand a second line\n"
    keep: |+
      kept


    strip: |-
      no newline
    folded: >
      folded
      text
`,
	// Scalars that need quotes or escapes, unicode, long values, odd keys, empty things.
	listHead + `- apiVersion: v1
  kind: ConfigMap
  metadata: {name: scalars, annotations: {}}
  data:
    "yes": "no"
    "": empty key
    "key: with colon": "value: with colon"
    "- dash": "- dash"
    tab: "a\tb"
    nul: "\0"
    bell: "\a"
    unicode: "日本語 ✓ \u00e9"
    nbsp: "a\u00a0b"
    long: "` + strings.Repeat("long words ", 40) + `"
    longkey` + strings.Repeat("k", 200) + `: v
    octal: "0777"
    float: "1e3"
    null: ~
    empty: ""
    list: []
    map: {}
    nested: [[1, 2], [3, [4]], {a: [5]}]
    '#': hash
    trailing: "x "
`,
	// Left to kyaml's writer: comments, an anchor and its alias, a scalar item.
	listHead + `- apiVersion: v1
  kind: Pod # a line comment
  metadata:
    # a head comment
    name: c
`,
	listHead + `- apiVersion: v1
  kind: ConfigMap
  metadata: {name: anchored}
  data: &d {a: b}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: alias}
  data: *d
`,
	listHead + "- just a scalar\n",
	listHead + "- [a, sequence]\n",
	// A list in JSON, and one with no items.
	`{"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "j"}}]}`,
	listHead[:len(listHead)-1] + " []\n",
}

// TestWriteResourceList checks writeResourceList against kyaml's writer on each case: the
// same bytes, or the same error.
func TestWriteResourceList(t *testing.T) {
	for _, in := range writeCases {
		want, wantErr := writeListBoth(t, in, false)
		got, gotErr := writeListBoth(t, in, true)
		if (gotErr != nil) != (wantErr != nil) || got != want {
			t.Errorf("input:\n%s\ngot (err %v):\n%s\nwant (err %v):\n%s", in, gotErr, got, wantErr, want)
		}
	}
}

// TestWriteResourceListEach checks that the first cases are the ones written item by item:
// the others would pass TestWriteResourceList by being written whole.
func TestWriteResourceListEach(t *testing.T) {
	for i, in := range writeCases {
		rw := &kio.ByteReadWriter{Reader: strings.NewReader(in), Writer: &bytes.Buffer{}, KeepReaderAnnotations: true}
		items, err := rw.Read()
		if err != nil {
			t.Fatal(err)
		}
		each := len(items) > 0 && rw.Style == 0 && !rw.NoWrap
		for _, it := range items {
			each = each && !needsWholeList(it)
		}
		if want := i < 3; each != want {
			t.Errorf("case %d: written item by item: %v, want %v", i, each, want)
		}
	}
}

// TestWriteResourceListPlaceholder checks a list whose own text holds the placeholder's line,
// in a functionConfig that is a sequence: the text is still kyaml's, with that line once.
func TestWriteResourceListPlaceholder(t *testing.T) {
	in := listHead + `- apiVersion: v1
  kind: Pod
  metadata: {name: p}
functionConfig:
- ` + placeholderText
	want, wantErr := writeListBoth(t, in, false)
	got, gotErr := writeListBoth(t, in, true)
	if gotErr != nil || wantErr != nil || got != want {
		t.Fatalf("got (err %v):\n%s\nwant (err %v):\n%s", gotErr, got, wantErr, want)
	}
	if n := strings.Count(got, "\n- "+placeholderText); n != 1 {
		t.Errorf("the output holds the placeholder's line %d times, want once, the functionConfig's:\n%s", n, got)
	}
}

// FuzzWriteResourceList compares writeResourceList with kyaml's writer on any ResourceList
// kyaml reads.
func FuzzWriteResourceList(f *testing.F) {
	for _, in := range writeCases {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > 1<<16 {
			return
		}
		want, wantErr := writeListBoth(t, in, false)
		if wantErr == errUnread {
			return
		}
		got, gotErr := writeListBoth(t, in, true)
		if (gotErr != nil) != (wantErr != nil) || got != want {
			t.Errorf("input %q:\ngot (err %v):\n%s\nwant (err %v):\n%s", in, gotErr, got, wantErr, want)
		}
	})
}

// errUnread is the error of writeListBoth for an input kyaml does not read.
var errUnread = &usageError{}

// writeListBoth reads the ResourceList in as processList does, and writes it with
// writeResourceList (each) or kyaml's writer.
func writeListBoth(t *testing.T, in string, each bool) (string, error) {
	t.Helper()
	var out bytes.Buffer
	rw := &kio.ByteReadWriter{Reader: strings.NewReader(in), Writer: &out, KeepReaderAnnotations: true}
	items, err := rw.Read()
	if err != nil {
		return "", errUnread
	}
	if each {
		err = writeResourceList(rw, items)
	} else {
		err = rw.Write(items)
	}
	return out.String(), err
}
