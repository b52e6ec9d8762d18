package main

// This file defines the benchmark of starpod apply over a Helm-like stream of workloads,
// per pod template, beside the same number of bare pods.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// workloadStream writes n documents, in turn a Deployment, a Service, a ConfigMap and a Job,
// each workload's template the training pod's metadata and spec, as Helm renders them (with
// # Source: lines), to a file. It returns the file and the number of templates.
func workloadStream(b *testing.B, n int) (string, int) {
	b.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "pods", "training.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	var pod map[string]any
	if err := yaml.Unmarshal(data, &pod); err != nil {
		b.Fatal(err)
	}
	meta := pod["metadata"].(map[string]any)
	template := map[string]any{"metadata": map[string]any{"labels": meta["labels"]}, "spec": pod["spec"]}
	var buf bytes.Buffer
	templates := 0
	for i := range n {
		name := fmt.Sprintf("app-%d", i)
		var doc map[string]any
		var source string
		switch i % 4 {
		case 0:
			source = "deployment.yaml"
			doc = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": name, "namespace": "ml-training"},
				"spec": map[string]any{"replicas": 2, "selector": map[string]any{"matchLabels": meta["labels"]},
					"template": template}}
			templates++
		case 1:
			source = "service.yaml"
			doc = map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": name},
				"spec": map[string]any{"selector": meta["labels"], "ports": []any{map[string]any{"port": 80}}}}
		case 2:
			source = "configmap.yaml"
			doc = map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name},
				"data": map[string]any{"level": "debug", "config.json": `{"batch": 32, "lr": 0.0003}`}}
		case 3:
			source = "job.yaml"
			doc = map[string]any{"apiVersion": "batch/v1", "kind": "Job",
				"metadata": map[string]any{"name": name, "namespace": "ml-training"},
				"spec":     map[string]any{"backoffLimit": 3, "template": template}}
			templates++
		}
		text, err := yaml.Marshal(doc)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(&buf, "---\n# Source: app/templates/%s\n", source)
		buf.Write(text)
	}
	file := filepath.Join(b.TempDir(), "workloads.yaml")
	if err := os.WriteFile(file, buf.Bytes(), 0o666); err != nil {
		b.Fatal(err)
	}
	return file, templates
}

// BenchmarkApplyWorkloadsCLI runs the starpod binary with the GPU overlay over a Helm-like
// stream of 1,000 documents (250 each of Deployments, Services, ConfigMaps and Jobs: 500 pod
// templates), and over 500 bare pods, and reports the time per pod or template
// (ns/template), which the README compares.
func BenchmarkApplyWorkloadsCLI(b *testing.B) {
	exe := filepath.Join(b.TempDir(), "starpod")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	mixed, templates := workloadStream(b, 1000)
	pods := benchStream(b, templates)
	overlay := filepath.Join("..", "..", "examples", "gpu-tolerations", "overlay.star")
	for _, bench := range []struct{ name, file string }{{"pods", pods}, {"workloads", mixed}} {
		for _, isolation := range []string{"worker", "none"} {
			b.Run(bench.name+"/isolation="+isolation, func(b *testing.B) {
				var total, cpu time.Duration
				for b.Loop() {
					var stderr bytes.Buffer
					cmd := exec.Command(exe, "apply", "--overlay-script", overlay, "-f", bench.file, "--isolation", isolation)
					cmd.Stdout, cmd.Stderr = io.Discard, &stderr
					start := time.Now()
					if err := cmd.Run(); err != nil {
						b.Fatalf("%v: %s", err, stderr.String())
					}
					total += time.Since(start)
					// The CPU time of starpod and of the workers it waited for: steadier
					// than wall time on a busy machine.
					cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				}
				b.ReportMetric(float64(total.Nanoseconds())/float64(b.N)/float64(templates), "ns/template")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(templates), "cpu-ns/template")
			})
		}
	}
}

// BenchmarkApplyWorkloads runs apply in this process, with overlays in this process too, over
// the streams of BenchmarkApplyWorkloadsCLI; ns/template is the time per pod or template.
func BenchmarkApplyWorkloads(b *testing.B) {
	mixed, templates := workloadStream(b, 1000)
	pods := benchStream(b, templates)
	overlay := filepath.Join("..", "..", "examples", "gpu-tolerations", "overlay.star")
	for _, bench := range []struct{ name, file string }{{"pods", pods}, {"workloads", mixed}} {
		b.Run(bench.name, func(b *testing.B) {
			for b.Loop() {
				var stderr bytes.Buffer
				args := []string{"apply", "--overlay-script", overlay, "-f", bench.file, "--isolation", "none", "-j", "1"}
				if code := run(context.Background(), args, nil, io.Discard, &stderr); code != 0 {
					b.Fatalf("exit %d: %s", code, stderr.String())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(templates), "ns/template")
		})
	}
}
