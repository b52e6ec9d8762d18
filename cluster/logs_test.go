package cluster

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

func TestFormatLogLine(t *testing.T) {
	for _, test := range []struct {
		prefix     string
		width, col int
		line, want string
	}{
		{"trainer/0", 9, -1, "step 1 loss 2.3", "trainer/0 step 1 loss 2.3\n"},
		{"ps/0", 9, -1, "ready", "ps/0      ready\n"},
		{"ps/0", 0, -1, "", "ps/0 \n"},
		{"trainer/0", 9, 0, "x", "\x1b[32mtrainer/0\x1b[0m x\n"},
		{"ps/0", 9, 13, "x", "\x1b[36mps/0\x1b[0m      x\n"},
		{"a/0", 3, -1, "tab\there, crlf\r", "a/0 tab\there, crlf\n"},
		{"a/0", 3, -1, "\x1b[2Jclear\x00\x7f", `a/0 \x1b[2Jclear\x00\x7f` + "\n"},
		{"a/0", 3, -1, "c1 \u009b, unicode é ✓", `a/0 c1 \u009b, unicode é ✓` + "\n"},
	} {
		got := FormatLogLine(test.prefix, test.width, test.col, test.line)
		if got != test.want {
			t.Errorf("FormatLogLine(%q, %d, %d, %q) = %q, want %q", test.prefix, test.width, test.col, test.line, got, test.want)
		}
	}
}

func TestLinePrinter(t *testing.T) {
	var buf bytes.Buffer
	p := newLinePrinter(&buf, false)
	p.add("trainer/0")
	p.add("ps/0")
	in := "epoch 1\nloss=2.5\nepoch 2\nloss=1.5\nno newline at the end"
	if err := p.copy("ps/0", strings.NewReader(in), nil); err != nil {
		t.Fatal(err)
	}
	if err := p.copy("trainer/0", strings.NewReader(in), regexp.MustCompile(`^loss=`)); err != nil {
		t.Fatal(err)
	}
	want := `ps/0      epoch 1
ps/0      loss=2.5
ps/0      epoch 2
ps/0      loss=1.5
ps/0      no newline at the end
trainer/0 loss=2.5
trainer/0 loss=1.5
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}

	buf.Reset()
	p = newLinePrinter(&buf, true)
	p.add("a/0")
	p.add("b/0")
	p.copy("b/0", strings.NewReader("x\n"), nil)
	p.copy("a/0", strings.NewReader("y\n"), nil)
	want = "\x1b[36mb/0\x1b[0m x\n\x1b[32ma/0\x1b[0m y\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("coloured lines (-want +got):\n%s", diff)
	}
}

// pod returns a pod as Volcano makes it for a task of job "app".
func pod(taskName string, containers ...string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name:   "app-" + taskName,
		Labels: map[string]string{vcbatch.JobNameKey: "app", vcbatch.TaskSpecKey: taskName},
	}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
	}
	return p
}

func logJob() *vcbatch.Job {
	return &vcbatch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ml"},
		Spec: vcbatch.JobSpec{Tasks: []vcbatch.TaskSpec{
			task("trainer", 1, 0), task("trainer", 1, 1), task("ps", 0, 0),
		}},
	}
}

func TestLogStreams(t *testing.T) {
	job := logJob()
	sidecar := pod("trainer-1", "main", "proxy")
	sidecar.Spec.InitContainers = []corev1.Container{{Name: "setup"}}
	chosen := pod("ps-0", "sidecar", "ps")
	chosen.Annotations = map[string]string{"kubectl.kubernetes.io/default-container": "ps"}
	pods := []corev1.Pod{
		pod("trainer-0", "main"),
		sidecar,
		chosen,
		pod("other-0", "x"), // not a task of this job
	}
	type s struct{ Pod, Container, Prefix string }
	for _, test := range []struct {
		target string
		opts   LogOptions
		want   []s
	}{
		{"app", LogOptions{}, []s{
			{"app-ps-0", "ps", "ps/0"},
			{"app-trainer-0", "main", "trainer/0"},
			{"app-trainer-1", "main", "trainer/1"},
		}},
		{"app/trainer", LogOptions{AllContainers: true}, []s{
			{"app-trainer-0", "main", "trainer/0"},
			{"app-trainer-1", "setup", "trainer/1/setup"},
			{"app-trainer-1", "main", "trainer/1/main"},
			{"app-trainer-1", "proxy", "trainer/1/proxy"},
		}},
		{"app/trainer/1", LogOptions{Container: "proxy"}, []s{{"app-trainer-1", "proxy", "trainer/1"}}},
		{"app/ps/0", LogOptions{}, []s{{"app-ps-0", "ps", "ps/0"}}},
	} {
		target, err := ParseLogTarget(test.target)
		if err != nil {
			t.Fatal(err)
		}
		streams, err := logStreams(jobPodRef(job), pods, target, test.opts)
		if err != nil {
			t.Errorf("%s: %v", test.target, err)
			continue
		}
		var got []s
		for _, st := range streams {
			got = append(got, s{st.pod, st.container, st.prefix})
		}
		if diff := cmp.Diff(test.want, got); diff != "" {
			t.Errorf("%s %+v: streams (-want +got):\n%s", test.target, test.opts, diff)
		}
	}

	target, _ := ParseLogTarget("app/trainer/0")
	_, err := logStreams(jobPodRef(job), pods, target, LogOptions{Container: "proxy"})
	if want := `pod "app-trainer-0": got container "proxy", want one of main`; err == nil || err.Error() != want {
		t.Errorf("missing container: got error %v, want %q", err, want)
	}
}

func TestCheckTarget(t *testing.T) {
	job := logJob()
	for _, test := range []struct{ target, want string }{
		{"app", ""},
		{"app/trainer", ""},
		{"app/trainer/1", ""},
		{"app/trainr", `got role "trainr", want one of trainer, ps (did you mean "trainer"?)`},
		{"app/x", `got role "x", want one of trainer, ps`},
		{"app/trainer/2", `got replica 2 of role "trainer", want one of 0, 1`},
	} {
		target, err := ParseLogTarget(test.target)
		if err != nil {
			t.Fatal(err)
		}
		err = checkTarget(jobReplicas(job), target)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != test.want {
			t.Errorf("checkTarget(%s) = %q, want %q", test.target, got, test.want)
		}
	}
}
