package cluster_test

import (
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/starpod/starpod/cluster"
)

func ExampleParseHandle() {
	h, err := cluster.ParseHandle("kubernetes://ml/llama-ft-x7k2")
	if err != nil {
		panic(err)
	}
	fmt.Println(h.Namespace, h.AppID)

	_, err = cluster.ParseHandle("kubernetes://llama-ft-x7k2")
	fmt.Println(err)
	// Output:
	// ml llama-ft-x7k2
	// handle "kubernetes://llama-ft-x7k2": got 1 path element after kubernetes://, want <namespace>/<app_id>
}

func ExampleParseLogTarget() {
	t, err := cluster.ParseLogTarget("kubernetes://ml/llama-ft-x7k2/trainer/1")
	if err != nil {
		panic(err)
	}
	fmt.Println(t.Handle, t.Role, t.Replica)
	// Output:
	// kubernetes://ml/llama-ft-x7k2 trainer 1
}

func ExampleAppStateOf() {
	for _, phase := range []vcbatch.JobPhase{vcbatch.Pending, vcbatch.Restarting, vcbatch.Aborted, vcbatch.Terminated, ""} {
		fmt.Printf("%q -> %s\n", phase, cluster.AppStateOf(phase))
	}
	// Output:
	// "Pending" -> PENDING
	// "Restarting" -> RUNNING
	// "Aborted" -> CANCELLED
	// "Terminated" -> FAILED
	// "" -> UNKNOWN
}

func ExampleStateOf() {
	task := func(name string) vcbatch.TaskSpec { return vcbatch.TaskSpec{Name: name, Replicas: 1} }
	job := &vcbatch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "llama-ft-x7k2", Namespace: "ml"},
		Spec:       vcbatch.JobSpec{Tasks: []vcbatch.TaskSpec{task("trainer-0"), task("trainer-1")}},
		Status: vcbatch.JobStatus{
			State: vcbatch.JobState{Phase: vcbatch.Running},
			TaskStatusCount: map[string]vcbatch.TaskState{
				"trainer-0": {Phase: map[corev1.PodPhase]int32{corev1.PodRunning: 1}},
				"trainer-1": {Phase: map[corev1.PodPhase]int32{"Bound": 1}},
			},
		},
	}
	fmt.Print(cluster.FormatStatus(cluster.StateOf(job)))
	// Output:
	// kubernetes://ml/llama-ft-x7k2 RUNNING (Running)
	//   trainer 0:RUNNING 1:PENDING
}

func ExampleProgress() {
	p := cluster.NewProgress(os.Stdout, false)
	st := cluster.Status{Handle: "kubernetes://ml/app", State: cluster.Pending, Phase: "Pending",
		Roles: []cluster.RoleStatus{{Name: "trainer", Replicas: []cluster.ReplicaStatus{{ID: 0, State: cluster.Pending}}}}}
	p.Update(st)
	st.State, st.Phase = cluster.Running, "Running"
	st.Roles[0].Replicas[0].State = cluster.Running
	p.Update(st)
	// Output:
	// kubernetes://ml/app PENDING (Pending)
	// trainer/0 PENDING
	// kubernetes://ml/app RUNNING (Running)
	// trainer/0 RUNNING
}

func ExampleFormatLogLine() {
	fmt.Print(cluster.FormatLogLine("ps/0", len("trainer/0"), -1, "listening on :29500"))
	fmt.Print(cluster.FormatLogLine("trainer/0", len("trainer/0"), -1, "step 1 loss=2.31"))
	// Output:
	// ps/0      listening on :29500
	// trainer/0 step 1 loss=2.31
}
