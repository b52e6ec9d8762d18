package scheduler

// This file defines the printed form of a job.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sync"

	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/starpod/starpod/internal/stream"
)

// Marshal returns the job as YAML or JSON (format "yaml" or "json"), with keys sorted and
// without nulls, empty output-only fields (status, creationTimestamp) or objects that held
// nothing else, so that what is printed is what a user would write.
func Marshal(job *vcbatch.Job, format string) ([]byte, error) {
	switch format {
	case "yaml", "":
		if len(job.Spec.Tasks) > 1 {
			if text, ok, err := marshalTasksYAML(job, nil); ok || err != nil {
				return text.join(), err
			}
		}
	case "json":
	default:
		return nil, fmt.Errorf("output format %q: want yaml or json", format)
	}
	obj, err := object(job)
	if err != nil {
		return nil, err
	}
	return marshalObject(obj, format)
}

// marshalObject prints the untyped object obj as YAML or JSON (format "yaml", "" or "json").
func marshalObject(obj map[string]any, format string) ([]byte, error) {
	switch format {
	case "yaml", "":
		return stream.MarshalYAML(obj)
	case "json":
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(obj); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	return nil, fmt.Errorf("output format %q: want yaml or json", format)
}

// Render builds the job of app as [Build] does and prints it as [Marshal] does. It is faster
// than the two one after the other: as YAML, each task is printed as soon as it is built,
// while the overlays of other replicas run. Its output and its errors are those of Build and
// Marshal.
func Render(ctx context.Context, app *App, cfg Config, opts BuildOptions, format string) ([]byte, error) {
	text, err := render(ctx, app, cfg, opts, format)
	return text.join(), err
}

// RenderTo is Render, writing the job to w once it is printed whole: nothing is written if
// building or printing fails, and a write error is returned as it is. It writes the texts
// of the tasks from where they were printed, without copying them into one text first.
func RenderTo(ctx context.Context, w io.Writer, app *App, cfg Config, opts BuildOptions, format string) error {
	text, err := render(ctx, app, cfg, opts, format)
	if err != nil {
		return err
	}
	return text.writeTo(w)
}

// render is Render, the text in pieces.
func render(ctx context.Context, app *App, cfg Config, opts BuildOptions, format string) (pieces, error) {
	if format != "yaml" && format != "" {
		job, err := Build(ctx, app, cfg, opts)
		if err != nil {
			return nil, err
		}
		text, err := Marshal(job, format)
		return pieces{text}, err
	}
	job, texts, err := build(ctx, app, cfg, opts, printTask)
	if err != nil {
		return nil, err
	}
	if len(texts) > 1 {
		if text, ok, err := marshalTasksYAML(job, texts); ok || err != nil {
			return text, err
		}
	}
	text, err := Marshal(job, format)
	return pieces{text}, err
}

// pieces are a text in pieces, in order.
type pieces [][]byte

// join returns the text whole; nil for no pieces.
func (p pieces) join() []byte {
	if len(p) <= 1 {
		if len(p) == 0 {
			return nil
		}
		return p[0]
	}
	return bytes.Join(p, nil)
}

// writeTo writes the text to w, through a buffer of its own.
func (p pieces) writeTo(w io.Writer) error {
	if len(p) == 1 {
		_, err := w.Write(p[0])
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, b := range p {
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// object returns v as pruned untyped JSON data.
func object(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	clean(obj)
	return obj, nil
}

// clean removes the status of the untyped job obj, its nulls and the objects that become
// empty by that.
func clean(obj map[string]any) {
	delete(obj, "status")
	stream.Prune(obj)
}

// tasksPrefix is how the YAML of {spec: {tasks: [task]}} starts.
const tasksPrefix = "spec:\n  tasks:\n"

// marshalTasksYAML prints the job as Marshal does, but each task on its own and several at
// once: printing YAML keeps every event of the document until its end, which makes one
// document of many tasks slow and large. Each task is printed where it sits in the job,
// as the only item of spec.tasks (by marshalTaskYAML), so that its text (indentation, lines
// wrapped at a column) is the text it has in the whole document; tasks holds these texts
// if they are printed already. The job without its tasks is then printed around them (by
// headYAML). It reports false if the job cannot be printed that way.
func marshalTasksYAML(job *vcbatch.Job, tasks [][]byte) (pieces, bool, error) {
	var errs []error
	if tasks == nil {
		tasks, errs = make([][]byte, len(job.Spec.Tasks)), make([]error, len(job.Spec.Tasks))
		printTasks(job.Spec.Tasks, tasks, errs)
	}
	text := make(pieces, 0, len(tasks)+2)
	text = append(text, nil)
	for t, data := range tasks {
		if errs != nil && errs[t] != nil {
			return nil, false, errs[t]
		}
		if !bytes.HasPrefix(data, []byte(tasksPrefix)) {
			return nil, false, nil
		}
		text = append(text, data[len(tasksPrefix):])
	}
	before, after, ok, err := headYAML(job)
	if !ok || err != nil {
		return nil, false, err
	}
	text[0] = before
	return append(text, after), true, nil
}

// tasksMark stands for the tasks of a job in the text headYAML prints: a plain scalar, which
// prints as itself.
const tasksMark = "starpod-tasks-c2f1d9e04b7a"

// headYAML prints the job as Marshal does, without its tasks, and returns the text up to and
// with the line "  tasks:" of spec, and the text after the tasks. It prints the job with
// tasksMark for spec.tasks and cuts the text at that line; it reports false if it cannot.
func headYAML(job *vcbatch.Job) (before, after []byte, ok bool, err error) {
	head := *job
	head.Spec.Tasks = nil
	obj, err := object(&head)
	if err != nil {
		return nil, nil, false, err
	}
	spec, isMap := obj["spec"].(map[string]any)
	if !isMap {
		return nil, nil, false, nil
	}
	spec["tasks"] = tasksMark
	text, err := stream.MarshalYAML(obj)
	if err != nil {
		return nil, nil, false, err
	}
	line := []byte("\n  tasks: " + tasksMark + "\n")
	i := bytes.Index(text, line)
	if i < 0 || bytes.Count(text, line) != 1 {
		return nil, nil, false, nil
	}
	before = append(text[:i+1:i+1], "  tasks:\n"...)
	return before, text[i+len(line):], true, nil
}

// printTasks sets texts[t] and errs[t] to what marshalTaskYAML gives for tasks[t], printing
// several tasks at once.
func printTasks(tasks []vcbatch.TaskSpec, texts [][]byte, errs []error) {
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(tasks)) {
		wg.Go(func() {
			for {
				next.Lock()
				t := i
				i++
				next.Unlock()
				if t >= len(tasks) {
					return
				}
				texts[t], errs[t] = marshalTaskYAML(&tasks[t])
			}
		})
	}
	wg.Wait()
}

// marshalTaskYAML returns the YAML of {spec: {tasks: [task]}}.
func marshalTaskYAML(task *vcbatch.TaskSpec) ([]byte, error) {
	text, _, err := printTask(task)
	return text, err
}

// printTask returns the YAML of {spec: {tasks: [task]}}, as marshalTaskYAML does, and the
// size of the task's JSON, as jsonSize counts it.
func printTask(task *vcbatch.TaskSpec) ([]byte, int64, error) {
	data, err := json.Marshal(task)
	if err != nil {
		return nil, 0, err
	}
	text, err := jsonTaskYAML(data)
	return text, int64(len(data)), err
}

// jsonTaskYAML returns the YAML of {spec: {tasks: [task]}} from the JSON of the task.
func jsonTaskYAML(data []byte) ([]byte, error) {
	const open, close = `{"spec":{"tasks":[`, `]}}`
	doc := make([]byte, 0, len(open)+len(data)+len(close))
	doc = append(append(append(doc, open...), data...), close...)
	return stream.YAMLOptions{Prune: true}.JSONToYAML(doc)
}
