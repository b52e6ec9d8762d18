// Package fast holds starpod's fast paths: code that does what a library does, several times
// faster, on the inputs most manifests are made of, and declines the rest, which the library
// path beside it handles. Each was measured end to end (10,000 pods through starpod apply, with
// and without it) and kept because removing it cost more than 15 %; docs/performance.md has the
// numbers. They are:
//
//   - [ParseBlockYAML] and [ReadBlockYAML]: a parser of the plain subset of block YAML that
//     most manifests are written in, for stream.Document.Parse (beside go.yaml.in/yaml/v2);
//   - [DecodePodYAML]: the decoding of such a pod document's text straight into a
//     *corev1.Pod, and [Decode], of untyped JSON data into a typed value, for convert.DecodePod
//     (beside strict decoding through Starlark values, which also reports every error);
//   - [JSONToYAML]: the printing of the JSON text encoding/json writes as YAML, byte for byte
//     as sigs.k8s.io/yaml.JSONToYAML prints it, for stream.MarshalYAML (beside that function).
//
// One more lives where it works, on convert's encoder: convert.ToStarlarkRecycled hands out
// the dicts and lists of one pod's Starlark values from chunks that the next pod reuses.
//
// Every fast path declines when [Off] is set (and ToStarlarkRecycled does not recycle), so that the library paths alone run: the golden
// and fuzz tests run both ways, and the CLI sets Off when STARPOD_FAST_PATHS=off.
package fast

// Off turns every fast path off. Set it before any use, not while fast paths may run.
var Off bool

// JSONToYAML appends to buf the YAML text of data, JSON text as encoding/json writes it
// (compact, an object or an array), byte for byte as sigs.k8s.io/yaml.JSONToYAML prints it.
// If prune is set, it leaves out null members of objects, and members whose value is an
// object that holds nothing else once that is done (but not objects that were empty to begin
// with). It reports false for text it does not take, and when Off is set.
func JSONToYAML(buf, data []byte, prune bool) ([]byte, bool) {
	if Off {
		return buf, false
	}
	return transcode(buf, data, prune)
}

// ParseBlockYAML parses doc, one YAML document cut from a stream at lines "---", into
// untyped JSON data (map[string]any, []any, string, json.Number, bool, nil) as
// sigs.k8s.io/yaml reads it, if doc keeps to the plain subset of block YAML that the parser
// takes, and its content, counted as stream's sizer counts it, stays within limit. It reports
// false for any other text, which the caller parses with the YAML library, so that the
// library alone decides every error and every rare form; and when Off is set.
func ParseBlockYAML(doc []byte, limit int64) (any, bool) {
	if Off || !oneDocument(doc) {
		return nil, false
	}
	return parseBlockYAML(doc, limit)
}
