package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/stream"
)

func init() { commands = append(commands, newApplyCmd) }

type applyFlags struct {
	overlayFlags
	files  []string
	output string
}

func newApplyCmd(a *app) *cobra.Command {
	f := &applyFlags{}
	cmd := &cobra.Command{
		Use:   "apply --overlay-script FILE... [-f FILE|-]... [-o yaml|json]",
		Short: "Apply overlays to every Pod of a YAML or JSON stream",
		Long: `Apply reads a multi-document YAML or JSON stream (the -f files in order, or standard
input), applies the overlays in order to every Pod, passes every other document through
unchanged and writes the documents in input order to standard output.

Nothing is written unless every document succeeds: on any error, standard output stays
empty, the error goes to standard error and the exit code is 1.`,
		Example: `  starpod apply --overlay-script gpu.star -f pod.yaml
  kubectl get pod trainer -o yaml | starpod apply --overlay-script gpu.star -o json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runApply(cmd.Context(), a, f)
		},
	}
	f.register(cmd.Flags(), true)
	cmd.Flags().StringArrayVarP(&f.files, "filename", "f", nil, "`FILE` to read, - for standard input (repeatable; default: standard input)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "yaml", "output format: yaml or json")
	return cmd
}

func runApply(ctx context.Context, a *app, f *applyFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(f.scripts) == 0 {
		return usagef("apply: no --overlay-script given")
	}
	if f.output != "yaml" && f.output != "json" {
		return usagef("--output: got %q, want yaml or json", f.output)
	}
	files := f.files
	if len(files) == 0 {
		files = []string{"-"}
	}
	stdin := 0
	for _, file := range files {
		if file == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return usagef("-f -: standard input given %d times, want at most once", stdin)
	}
	env, err := f.env()
	if err != nil {
		return err
	}
	chain, err := f.compile(a, f.scripts)
	if err != nil {
		return err
	}

	var out bytes.Buffer
	w := &docWriter{w: &out, format: f.output}
	for _, file := range files {
		if err := applyFile(ctx, a, chain, env, file, w); err != nil {
			return err
		}
	}
	_, err = out.WriteTo(a.stdout)
	return err
}

// applyFile applies chain to every Pod of one input stream.
func applyFile(ctx context.Context, a *app, chain engine.Chain, env *engine.Env, file string, w *docWriter) error {
	var r io.Reader
	name := file
	if file == "-" {
		r, name = a.stdin, "<stdin>"
	} else {
		fh, err := os.Open(file)
		if err != nil {
			return err
		}
		defer fh.Close()
		r = fh
	}
	sr := stream.NewReader(name, r)
	for {
		doc, err := sr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if !isPod(doc) {
			if err := w.passThrough(doc); err != nil {
				return err
			}
			continue
		}
		pod, err := decodePod(doc)
		if err != nil {
			return err
		}
		res, err := chain.Apply(ctx, pod, env)
		if err != nil {
			return docError(doc, pod, err)
		}
		if err := w.write(res); err != nil {
			return err
		}
	}
}

// isPod reports whether doc is a core/v1 Pod.
func isPod(doc *stream.Document) bool {
	apiVersion, kind := doc.Kind()
	return kind == "Pod" && apiVersion == "v1"
}

// decodePod decodes a Pod document strictly, reporting every problem with its field path.
func decodePod(doc *stream.Document) (*corev1.Pod, error) {
	pod, err := engine.DecodePod(doc.Object)
	if err != nil {
		var b strings.Builder
		for i, line := range strings.Split(err.Error(), "\n") {
			if i > 0 {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "%s:%d: invalid pod: %s", doc.File, doc.Line, line)
		}
		return nil, errors.New(b.String())
	}
	return pod, nil
}

// docError puts the document an overlay failed on in front of the overlay's error, and its
// backtrace after it.
func docError(doc *stream.Document, pod *corev1.Pod, err error) error {
	where := fmt.Sprintf("%s:%d: pod %q", doc.File, doc.Line, pod.Name)
	var b strings.Builder
	for i, line := range strings.Split(err.Error(), "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(where + ": " + line)
	}
	var e *engine.Error
	if errors.As(err, &e) && e.Backtrace != "" {
		b.WriteString("\n" + e.Backtrace)
	}
	return errors.New(b.String())
}

// docWriter writes documents in YAML (separated by ---) or JSON (one value after another).
type docWriter struct {
	w      io.Writer
	format string
	n      int
}

func (w *docWriter) sep() error {
	w.n++
	if w.format == "yaml" && w.n > 1 {
		_, err := io.WriteString(w.w, "---\n")
		return err
	}
	return nil
}

// write writes an object the overlays produced.
func (w *docWriter) write(obj any) error {
	if err := w.sep(); err != nil {
		return err
	}
	var data []byte
	var err error
	if w.format == "json" {
		data, err = json.MarshalIndent(obj, "", "  ")
		data = append(data, '\n')
	} else {
		data, err = yaml.Marshal(obj)
	}
	if err != nil {
		return err
	}
	_, err = w.w.Write(data)
	return err
}

// passThrough writes a document that is not a Pod unchanged: its text when the formats
// agree, its content otherwise.
func (w *docWriter) passThrough(doc *stream.Document) error {
	if doc.JSON != (w.format == "json") {
		return w.write(doc.Object)
	}
	if err := w.sep(); err != nil {
		return err
	}
	raw := doc.Raw
	if doc.JSON {
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, "", "  "); err != nil {
			return err
		}
		raw = append(buf.Bytes(), '\n')
	} else if !bytes.HasSuffix(raw, []byte("\n")) {
		raw = append(raw, '\n')
	}
	_, err := w.w.Write(raw)
	return err
}
