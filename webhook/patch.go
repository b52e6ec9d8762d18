package webhook

// This file defines the JSONPatch of a response: the change from the object the API server
// sent to the object the overlays made.

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"

	"github.com/starpod/starpod/internal/fast"
)

// makePatch returns the RFC 6902 patch that turns raw, the object as the API server sent
// it, into the object whose encoding is after. before is the encoding of raw as decoded,
// with the same encoder as after.
//
// The patch is the difference between before and after, computed by gomodules.xyz/jsonpatch
// (as controller-runtime does): a diff from raw itself would also remove every field raw
// holds that this build's API types do not know (a newer API server's fields) and add the
// empty values the encoder writes. An operation whose parent raw does not hold (raw has no
// "resources", the encoder wrote "resources": {}) becomes an add of the first missing
// ancestor, with its value from after.
func makePatch(raw, before, after []byte) ([]byte, error) {
	ops, err := diffJSON(before, after, "", maxPruneDepth)
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, nil
	}
	if bytes.Equal(bytes.TrimSpace(raw), before) {
		// The API server encodes as this build does: the patch applies to raw as it is.
		sortOps(ops)
		return json.Marshal(ops)
	}
	var rawDoc, afterDoc any
	if err := json.Unmarshal(raw, &rawDoc); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(after, &afterDoc); err != nil {
		return nil, err
	}
	var out []jsonpatch.Operation
	lifted := make(map[string]bool)
	for _, op := range ops {
		if underAny(op.Path, lifted) {
			continue // the lifted add holds it
		}
		anc, ok := missingAncestor(rawDoc, op.Path)
		switch {
		case ok && op.Operation == "remove":
			continue // raw does not hold it
		case ok:
			v, found := lookup(afterDoc, anc)
			if !found {
				continue
			}
			lifted[anc] = true
			out = append(out, jsonpatch.NewOperation("add", anc, v))
		case op.Operation == "replace":
			if _, found := lookup(rawDoc, op.Path); !found {
				op.Operation = "add"
			}
			out = append(out, op)
		default:
			out = append(out, op)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	sortOps(out)
	return json.Marshal(out)
}

// maxPruneDepth is how many levels of objects diffJSON splits.
const maxPruneDepth = 4

// diffJSON returns the operations that turn the JSON document a into b, with path the JSON
// pointer of both: those gomodules.xyz/jsonpatch.CreatePatch returns, in another order.
// Where a and b are both objects, down to depth levels, it splits them into members without
// decoding them, skips those whose encodings are equal, and diffs the others member by
// member: an overlay changes a few fields of a pod, and decoding the whole of it twice into
// maps took most of an admission's time. With internal/fast's Off set, CreatePatch diffs the
// whole documents.
func diffJSON(a, b []byte, path string, depth int) ([]jsonpatch.Operation, error) {
	if bytes.Equal(a, b) {
		return nil, nil
	}
	if depth == 0 || fast.Off || !isObject(a) || !isObject(b) {
		ops, err := jsonpatch.CreatePatch(a, b)
		for i := range ops {
			ops[i].Path = path + ops[i].Path
		}
		return ops, err
	}
	var am, bm map[string]json.RawMessage
	if err := json.Unmarshal(a, &am); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &bm); err != nil {
		return nil, err
	}
	var ops []jsonpatch.Operation
	for k, bv := range bm {
		p := path + "/" + pointerEscaper.Replace(k)
		av, ok := am[k]
		if !ok {
			var v any
			dec := json.NewDecoder(bytes.NewReader(bv))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				return nil, err
			}
			ops = append(ops, jsonpatch.NewOperation("add", p, v))
			continue
		}
		sub, err := diffJSON(av, bv, p, depth-1)
		if err != nil {
			return nil, err
		}
		ops = append(ops, sub...)
	}
	for k := range am {
		if _, ok := bm[k]; !ok {
			ops = append(ops, jsonpatch.NewOperation("remove", path+"/"+pointerEscaper.Replace(k), nil))
		}
	}
	return ops, nil
}

// isObject reports whether the JSON value data is an object.
func isObject(data []byte) bool {
	data = bytes.TrimLeft(data, " \t\r\n")
	return len(data) > 0 && data[0] == '{'
}

// pointerEscaper escapes a key as a token of a JSON pointer (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// sortOps puts ops in a deterministic order, the order of their paths (array indices as
// numbers), so that the same change always gives the same patch: jsonpatch walks maps in Go's
// random order. The order of the operations jsonpatch makes matters only within one array,
// where it removes from the end (highest index first) and appends (lowest first), and this
// order keeps both.
func sortOps(ops []jsonpatch.Operation) {
	sort.SliceStable(ops, func(i, j int) bool {
		a, b := strings.Split(ops[i].Path, "/"), strings.Split(ops[j].Path, "/")
		for k := 0; k < len(a) && k < len(b); k++ {
			if a[k] == b[k] {
				continue
			}
			na, errA := strconv.Atoi(a[k])
			nb, errB := strconv.Atoi(b[k])
			if errA == nil && errB == nil {
				if ops[i].Operation == "remove" && ops[j].Operation == "remove" && k == len(a)-1 && k == len(b)-1 {
					return na > nb
				}
				return na < nb
			}
			return a[k] < b[k]
		}
		return len(a) < len(b)
	})
}

// underAny reports whether path is below one of the paths in set.
func underAny(path string, set map[string]bool) bool {
	for p := range set {
		if strings.HasPrefix(path, p+"/") || path == p {
			return true
		}
	}
	return false
}

// missingAncestor returns the shortest proper prefix of the JSON pointer path, other than
// the whole document, that doc does not hold, and whether there is one.
func missingAncestor(doc any, path string) (string, bool) {
	toks := strings.Split(path, "/")[1:]
	cur := doc
	for i := 0; i < len(toks)-1; i++ {
		next, ok := child(cur, unescape(toks[i]))
		if !ok {
			return "/" + strings.Join(toks[:i+1], "/"), true
		}
		cur = next
	}
	return "", false
}

// lookup returns the value at the JSON pointer path in doc.
func lookup(doc any, path string) (any, bool) {
	if path == "" {
		return doc, true
	}
	cur := doc
	for _, t := range strings.Split(path, "/")[1:] {
		next, ok := child(cur, unescape(t))
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

func child(v any, tok string) (any, bool) {
	switch v := v.(type) {
	case map[string]any:
		c, ok := v[tok]
		return c, ok
	case []any:
		i, err := strconv.Atoi(tok)
		if err != nil || i < 0 || i >= len(v) {
			return nil, false
		}
		return v[i], true
	}
	return nil, false
}

func unescape(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
}
