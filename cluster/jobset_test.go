package cluster

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/starpod/starpod/scheduler"
)

func TestParseJobSetHandle(t *testing.T) {
	h, err := ParseHandle("jobset://ml/llama-ft-x7k2")
	if err != nil || h != (Handle{"ml", "llama-ft-x7k2", scheduler.SchedulerJobSet}) || h.String() != "jobset://ml/llama-ft-x7k2" {
		t.Errorf("got %+v %v", h, err)
	}
	lt, err := ParseLogTarget("jobset://ml/app/trainer/1")
	if err != nil || lt.Handle != (Handle{"ml", "app", scheduler.SchedulerJobSet}) || lt.Role != "trainer" || lt.Replica != 1 {
		t.Errorf("got %+v %v", lt, err)
	}
	if _, err := ParseHandle("jobset://ml"); err == nil {
		t.Error("jobset://ml: no error")
	}
	if _, err := ParseHandle("volcano://ml/a"); err == nil {
		t.Error("volcano://ml/a: no error")
	}
}

func TestParseIndexes(t *testing.T) {
	got := parseIndexes("0,2-4,7,x,9-8")
	want := map[int]bool{0: true, 2: true, 3: true, 4: true, 7: true}
	if !cmp.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if n := len(parseIndexes("0-999999999")); n != maxIndexes {
		t.Errorf("a huge range gives %d indexes, want %d", n, maxIndexes)
	}
}

// testJobSet returns a JobSet of two roles as BuildJobSet makes it, as the API server
// answers it.
func testJobSet() *jobset.JobSet {
	three, one := int32(3), int32(1)
	return &jobset.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ml", UID: "js-uid",
			Labels: map[string]string{labelAppName: "demo"}},
		Spec: jobset.JobSetSpec{ReplicatedJobs: []jobset.ReplicatedJob{
			{Name: "trainer", Replicas: 1, Template: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{labelRoleIndex: "0"}},
				Spec:       batchv1.JobSpec{Completions: &three, Parallelism: &three}}},
			{Name: "ps", Replicas: 1, Template: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{labelRoleIndex: "1"}},
				Spec:       batchv1.JobSpec{Completions: &one, Parallelism: &one}}},
		}},
	}
}

func testPod(role string, index string, phase corev1.PodPhase, created time.Time) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app-" + role + "-0-" + index + "-x", CreationTimestamp: metav1.NewTime(created),
			Labels:      map[string]string{jobset.JobSetNameKey: "app", jobset.ReplicatedJobNameKey: role, jobset.JobIndexKey: "0", jobset.JobSetUIDKey: "js-uid"},
			Annotations: map[string]string{scheduler.CompletionIndexAnnotation: index}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func replicaStates(st Status) []string {
	var out []string
	for _, r := range st.Roles {
		for _, rep := range r.Replicas {
			out = append(out, r.Name+"/"+string(rune('0'+rep.ID))+" "+string(rep.State))
		}
	}
	return out
}

func TestStateOfJobSet(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	js := testJobSet()
	// No status yet.
	st := StateOfJobSet(js, nil, nil)
	if st.State != Unknown || st.Handle != "jobset://ml/app" || st.Name != "demo" {
		t.Errorf("no status: %+v", st)
	}

	// Queued in Kueue: suspended, waiting for admission.
	js.Spec.Suspend = ptr(true)
	js.Labels[scheduler.LabelKueueQueue] = "team-a"
	st = StateOfJobSet(js, nil, nil)
	if st.State != Pending || st.Reason != ReasonKueueAdmission || st.Message != `waiting for Kueue admission in queue "team-a"` {
		t.Errorf("queued: %+v", st)
	}
	if got := replicaStates(st); !cmp.Equal(got, []string{"trainer/0 PENDING", "trainer/1 PENDING", "trainer/2 PENDING", "ps/0 PENDING"}) {
		t.Errorf("queued replicas: %v", got)
	}

	// Admitted and running: replica 0 done, 1 running (its newest pod), 2 failed its retries.
	js.Spec.Suspend = ptr(false)
	js.Status.ReplicatedJobsStatus = []jobset.ReplicatedJobStatus{{Name: "trainer", Active: 1}}
	failed := "2"
	jobs := []batchv1.Job{{
		ObjectMeta: metav1.ObjectMeta{Name: "app-trainer-0", Labels: map[string]string{jobset.JobSetUIDKey: "js-uid"}},
		Status:     batchv1.JobStatus{CompletedIndexes: "0", FailedIndexes: &failed},
	}, {
		// a Job of an earlier JobSet of the same name
		ObjectMeta: metav1.ObjectMeta{Name: "app-ps-0", Labels: map[string]string{jobset.JobSetUIDKey: "old"}},
		Status:     batchv1.JobStatus{CompletedIndexes: "0"},
	}}
	pods := []corev1.Pod{
		testPod("trainer", "1", corev1.PodFailed, t0),
		testPod("trainer", "1", corev1.PodRunning, t0.Add(time.Minute)),
		testPod("ps", "0", corev1.PodPending, t0),
	}
	// The cluster's lists are filtered by jobSetParts; here, by hand.
	st = StateOfJobSet(js, jobs[:1], pods)
	if st.State != Running || st.Phase != "Running" {
		t.Errorf("running: %+v", st)
	}
	if got := replicaStates(st); !cmp.Equal(got, []string{"trainer/0 SUCCEEDED", "trainer/1 RUNNING", "trainer/2 FAILED", "ps/0 PENDING"}) {
		t.Errorf("running replicas: %v", got)
	}

	// Failed, by the JobSet's condition.
	js.Status.Conditions = []metav1.Condition{{Type: "Failed", Status: metav1.ConditionTrue, Reason: "FailedJobs", Message: "jobset failed due to one or more job failures"}}
	st = StateOfJobSet(js, jobs[:1], nil)
	if st.State != Failed || st.Reason != "FailedJobs" || !st.State.Final() {
		t.Errorf("failed: %+v", st)
	}

	// Cancelled: suspended by starpod cancel.
	js.Status.Conditions = nil
	js.Spec.Suspend = ptr(true)
	js.Annotations = map[string]string{AnnotationCancelled: "2025-01-02T03:04:05Z"}
	if st = StateOfJobSet(js, nil, nil); st.State != Cancelled || st.Reason != ReasonCancelled {
		t.Errorf("cancelled: %+v", st)
	}

	// Completed.
	js.Status.Conditions = []metav1.Condition{{Type: "Completed", Status: metav1.ConditionTrue}}
	st = StateOfJobSet(js, nil, nil)
	if got := replicaStates(st); st.State != Succeeded || !cmp.Equal(got, []string{"trainer/0 SUCCEEDED", "trainer/1 SUCCEEDED", "trainer/2 SUCCEEDED", "ps/0 SUCCEEDED"}) {
		t.Errorf("completed: %+v", st)
	}
}

func TestJobSetPodRef(t *testing.T) {
	js := testJobSet()
	ref := jobSetPodRef(js)
	p := testPod("trainer", "2", corev1.PodRunning, time.Time{})
	if r, ok := ref(&p); !ok || r != (replicaRef{role: "trainer", roleIndex: 0, replica: 2}) {
		t.Errorf("got %+v %v", r, ok)
	}
	p.Labels[jobset.JobSetUIDKey] = "old"
	if _, ok := ref(&p); ok {
		t.Error("a pod of another JobSet of the same name is taken")
	}
	p = testPod("other", "0", corev1.PodRunning, time.Time{})
	if _, ok := ref(&p); ok {
		t.Error("a pod of an unknown role is taken")
	}
	refs := jobSetReplicas(js)
	if len(refs) != 4 || refs[3] != (replicaRef{role: "ps", roleIndex: 1, replica: 0}) {
		t.Errorf("replicas %+v", refs)
	}
	if err := checkTarget(refs, LogTarget{Role: "trainer", Replica: 3}); err == nil {
		t.Error("replica 3 of 3 is accepted")
	}
}
