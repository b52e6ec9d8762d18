// Package exampletest loads the pod examples of the repository for the tests that run them.
//
// A pod example is a folder examples/<name>/ holding overlay.star, pod.yaml, expected.yaml and,
// optionally, env.yaml, the ctx its overlay sees. Folders with an app.yaml are app examples,
// run by package scheduler's tests; [Load] leaves them out.
package exampletest

import (
	"context"
	"fmt"
	"github.com/starpod/starpod/internal/pipeline"
	"os"
	"path/filepath"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/convert"
)

// An Example is one pod example.
type Example struct {
	Name     string               // the folder's name
	Dir      string               // the folder
	Script   string               // its overlay.star
	Expected string               // its expected.yaml
	Src      []byte               // the overlay's source
	Pod      *corev1.Pod          // from pod.yaml
	Defaults *convert.PodDefaults // the empty defaults pod.yaml holds
	Env      *engine.Env          // from env.yaml, or empty
}

// envFile is the shape of env.yaml.
type envFile struct {
	AppID       string            `json:"app_id"`
	Role        string            `json:"role"`
	ReplicaID   int               `json:"replica_id"`
	NumReplicas int               `json:"num_replicas"`
	Scheduler   string            `json:"scheduler"`
	Args        map[string]string `json:"args"`
}

// Load reads every pod example in the folder examples, in name order. A folder that is
// neither a pod example nor an app example is an error.
func Load(examples string) ([]*Example, error) {
	entries, err := os.ReadDir(examples)
	if err != nil {
		return nil, err
	}
	var list []*Example
	for _, entry := range entries {
		if !entry.IsDir() {
			continue
		}
		dir := filepath.Join(examples, entry.Name())
		if _, err := os.Stat(filepath.Join(dir, "app.yaml")); err == nil {
			continue
		}
		e, err := load(dir)
		if err != nil {
			return nil, fmt.Errorf("%s: every example needs overlay.star and pod.yaml, or app.yaml: %v", dir, err)
		}
		list = append(list, e)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return list, nil
}

func load(dir string) (*Example, error) {
	e := &Example{
		Name:     filepath.Base(dir),
		Dir:      dir,
		Script:   filepath.Join(dir, "overlay.star"),
		Expected: filepath.Join(dir, "expected.yaml"),
		Pod:      new(corev1.Pod),
		Env:      new(engine.Env),
	}
	var err error
	if e.Src, err = os.ReadFile(e.Script); err != nil {
		return nil, err
	}
	if err := readYAML(filepath.Join(dir, "pod.yaml"), e.Pod); err != nil {
		return nil, err
	}
	var obj any
	if err := readYAML(filepath.Join(dir, "pod.yaml"), &obj); err != nil {
		return nil, err
	}
	e.Defaults = convert.PodDefaultsOf(obj)
	envPath := filepath.Join(dir, "env.yaml")
	if _, err := os.Stat(envPath); err == nil {
		var f envFile
		if err := readYAML(envPath, &f); err != nil {
			return nil, err
		}
		*e.Env = engine.Env{AppID: f.AppID, Role: f.Role, ReplicaID: f.ReplicaID,
			NumReplicas: f.NumReplicas, Scheduler: f.Scheduler, Args: f.Args}
	}
	return e, nil
}

// Compile compiles the example's overlay with opts, loading modules from its folder.
func (e *Example) Compile(ctx context.Context, opts engine.Options) (*engine.Overlay, error) {
	if opts.Loader == nil {
		opts.Loader = engine.DirLoader(e.Dir)
	}
	return engine.Compile(ctx, e.Script, e.Src, &opts)
}

// MarshalYAML prints a result of the example's overlay as starpod apply prints a pod the
// overlay changed: sorted keys, without the empty defaults that pod.yaml did not hold.
func (e *Example) MarshalYAML(pod *corev1.Pod) ([]byte, error) {
	return pipeline.EncodePod(pod, e.Defaults, "yaml")
}

// readYAML decodes a file strictly.
func readYAML(file string, v any) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		return fmt.Errorf("%s: %v", file, err)
	}
	return nil
}
