package scheduler

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// TestMarshalTasks checks that the YAML of a job of several tasks, printed a task at a time,
// is the text of the whole job printed at once by sigs.k8s.io/yaml, with scalars that wrap at
// a column, span lines, need quotes or are not ASCII, at every depth.
func TestMarshalTasks(t *testing.T) {
	words := strings.Repeat("a long value with spaces that the printer folds ", 6)
	job := &vcbatch.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "x", Annotations: map[string]string{"a": words, "tasks": "tasks: []"}},
		Spec: vcbatch.JobSpec{
			Queue:   "default",
			Plugins: map[string][]string{"svc": {"--publish-not-ready-addresses"}, "env": {}},
		},
	}
	values := []string{
		words,
		"line one\nline two\n",
		"trailing spaces  \n  and leading",
		"key: value # not a comment",
		"- not an item",
		"ünïcödé ✓ " + words,
		"'quoted' \"twice\"",
		"123", "true", "null", "",
		strings.Repeat("x", 200),
		"\ttab\x01control",
	}
	for i, v := range values {
		task := vcbatch.TaskSpec{
			Name:     "r-" + strings.Repeat("n", i),
			Replicas: 1,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"l": "v"}, Annotations: map[string]string{v: v}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "c", Image: "i", Command: []string{v, "-c"}, Args: []string{v},
					Env: []corev1.EnvVar{{Name: "E", Value: v}},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
				}}},
			},
		}
		if i%2 == 0 {
			task.MinAvailable = ptr(int32(i))
		}
		job.Spec.Tasks = append(job.Spec.Tasks, task)
	}
	for i := range job.Spec.Tasks {
		task := &job.Spec.Tasks[i]
		// printTask prints the same text, and counts the length of the task's JSON.
		text, size, err := printTask(task)
		if err != nil {
			t.Fatal(err)
		}
		if want, err := marshalTaskYAML(task); err != nil || string(text) != string(want) {
			t.Errorf("task %d: printTask prints %q, marshalTaskYAML %q (error %v)", i, text, want, err)
		}
		if data, err := json.Marshal(task); err != nil || size != int64(len(data)) {
			t.Errorf("task %d: printTask counts %d, json.Marshal gives %d bytes (error %v)", i, size, len(data), err)
		}
	}
	obj, err := object(job)
	if err != nil {
		t.Fatal(err)
	}
	want, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := marshalTasksYAML(job, nil)
	if err != nil || !ok {
		t.Fatalf("got ok %v, error %v, want the tasks printed one at a time", ok, err)
	}
	if diff := cmp.Diff(string(want), string(got.join())); diff != "" {
		t.Errorf("(-whole +by task):\n%s", diff)
	}
	// A value folded at column 80 inside a task: the case that needs each task printed at its place.
	if folded := "\n            value: 'a long value with spaces that the printer folds a long value with\n              spaces"; !strings.Contains(string(want), folded) {
		t.Errorf("the job has no folded env value inside a task:\n%s", want)
	}
	viaMarshal, err := Marshal(job, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(viaMarshal) != string(got.join()) {
		t.Errorf("Marshal does not print the tasks one at a time")
	}

	// The job around its tasks prints as the whole job does: with a status (left out), a
	// time, and the other members of spec before and after tasks.
	more := job.DeepCopy()
	more.CreationTimestamp = metav1.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	more.Spec.TTLSecondsAfterFinished = ptr(int32(60))
	more.Spec.MinAvailable, more.Spec.MaxRetry, more.Spec.SchedulerName = 3, 2, "volcano"
	more.Spec.Volumes = []vcbatch.VolumeSpec{{MountPath: "/data", VolumeClaimName: "claim"}}
	more.Status = vcbatch.JobStatus{State: vcbatch.JobState{Phase: vcbatch.Running}, Running: 2}
	obj, err = object(more)
	if err != nil {
		t.Fatal(err)
	}
	if want, err = yaml.Marshal(obj); err != nil {
		t.Fatal(err)
	}
	if got, ok, err = marshalTasksYAML(more, nil); err != nil || !ok {
		t.Fatalf("got ok %v, error %v, want the tasks printed one at a time", ok, err)
	}
	if diff := cmp.Diff(string(want), string(got.join())); diff != "" {
		t.Errorf("the job around its tasks (-whole +by task):\n%s", diff)
	}
}
