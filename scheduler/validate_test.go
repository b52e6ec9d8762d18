package scheduler

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestValidatePod checks the pod checks one at a time, on the pod of a role changed as an
// overlay might, by the type and field path of each error.
func TestValidatePod(t *testing.T) {
	type problem struct {
		Type  field.ErrorType
		Field string
	}
	q := resource.MustParse
	for _, test := range []struct {
		name   string
		change func(*corev1.Pod)
		want   []problem
	}{
		{"unchanged", func(*corev1.Pod) {}, nil},
		{"empty enums are defaulted", func(p *corev1.Pod) {
			p.Spec.RestartPolicy, p.Spec.DNSPolicy = "", ""
			p.Spec.Containers[0].ImagePullPolicy = ""
			p.Spec.Containers[0].Ports[0].Protocol = ""
		}, nil},
		{"every enum value", func(p *corev1.Pod) {
			p.Spec.RestartPolicy, p.Spec.DNSPolicy = corev1.RestartPolicyOnFailure, corev1.DNSNone
			p.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
			p.Spec.Containers[0].Ports[0].Protocol = corev1.ProtocolSCTP
		}, nil},
		{"restartPolicy", func(p *corev1.Pod) { p.Spec.RestartPolicy = "never" },
			[]problem{{field.ErrorTypeNotSupported, "spec.restartPolicy"}}},
		{"dnsPolicy", func(p *corev1.Pod) { p.Spec.DNSPolicy = "Cluster" },
			[]problem{{field.ErrorTypeNotSupported, "spec.dnsPolicy"}}},
		{"imagePullPolicy", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "i", ImagePullPolicy: "Sometimes"}}
			p.Spec.Containers[0].ImagePullPolicy = "always"
		}, []problem{
			{field.ErrorTypeNotSupported, "spec.initContainers[0].imagePullPolicy"},
			{field.ErrorTypeNotSupported, "spec.containers[0].imagePullPolicy"},
		}},
		{"port protocol", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "HTTP" },
			[]problem{{field.ErrorTypeNotSupported, "spec.containers[0].ports[0].protocol"}}},
		{"port numbers", func(p *corev1.Pod) {
			c := &p.Spec.Containers[0]
			c.Ports[0].ContainerPort, c.Ports[0].HostPort = 0, -1
			c.Ports = append(c.Ports,
				corev1.ContainerPort{ContainerPort: 65536, HostPort: 65536},
				corev1.ContainerPort{ContainerPort: 65535, HostPort: 1},
				corev1.ContainerPort{ContainerPort: 1, HostPort: 0})
		}, []problem{
			{field.ErrorTypeInvalid, "spec.containers[0].ports[0].containerPort"},
			{field.ErrorTypeInvalid, "spec.containers[0].ports[0].hostPort"},
			{field.ErrorTypeInvalid, "spec.containers[0].ports[2].containerPort"},
			{field.ErrorTypeInvalid, "spec.containers[0].ports[2].hostPort"},
		}},
		{"duplicate port names", func(p *corev1.Pod) {
			c := &p.Spec.Containers[0]
			c.Ports = append(c.Ports, corev1.ContainerPort{Name: "metrics", ContainerPort: 2},
				corev1.ContainerPort{Name: "rdzv", ContainerPort: 3}, corev1.ContainerPort{ContainerPort: 4},
				corev1.ContainerPort{ContainerPort: 5})
			// Another container may use the same name.
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side", Image: "i",
				Ports: []corev1.ContainerPort{{Name: "rdzv", ContainerPort: 6}}})
		}, []problem{
			{field.ErrorTypeDuplicate, "spec.containers[0].ports[2].name"},
			{field.ErrorTypeDuplicate, "spec.containers[0].ports[3].name"},
		}},
		{"env value and valueFrom", func(p *corev1.Pod) {
			c := &p.Spec.Containers[0]
			c.Env = append(c.Env,
				corev1.EnvVar{Name: "OK", Value: "x"},
				corev1.EnvVar{Name: "BOTH", Value: "x", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}})
		}, []problem{{field.ErrorTypeInvalid, "spec.containers[0].env[1].valueFrom"}}},
		{"requests above limits", func(p *corev1.Pod) {
			r := &p.Spec.Containers[0].Resources
			r.Requests[corev1.ResourceCPU] = q("2001m")
			r.Requests[corev1.ResourceMemory] = q("2G")
			r.Limits[corev1.ResourceEphemeralStorage] = q("1Gi")
			r.Requests[corev1.ResourceEphemeralStorage] = q("1025Mi")
			r.Requests["kubernetes.io/batteries"] = q("2") // native: may be overcommitted
		}, []problem{
			{field.ErrorTypeInvalid, "spec.containers[0].resources.requests[cpu]"},
			{field.ErrorTypeInvalid, "spec.containers[0].resources.requests[ephemeral-storage]"},
			{field.ErrorTypeInvalid, "spec.containers[0].resources.requests[memory]"},
		}},
		{"requests equal to limits", func(p *corev1.Pod) {
			r := &p.Spec.Containers[0].Resources
			r.Requests[corev1.ResourceCPU] = q("2")
			r.Requests[corev1.ResourceMemory] = q("1000M")
		}, nil},
		{"devices and hugepages are not overcommitted", func(p *corev1.Pod) {
			r := &p.Spec.Containers[0].Resources
			r.Requests[gpuDevice] = q("2") // below the limit 4
			r.Requests[EFADevice] = q("1") // no limit
			r.Limits["hugepages-2Mi"], r.Requests["hugepages-2Mi"] = q("2Mi"), q("4Mi")
			r.Limits["example.com/fpga"], r.Requests["example.com/fpga"] = q("1"), q("1000m")
		}, []problem{
			{field.ErrorTypeInvalid, "spec.containers[0].resources.requests[hugepages-2Mi]"},
			{field.ErrorTypeInvalid, "spec.containers[0].resources.requests[nvidia.com/gpu]"},
			{field.ErrorTypeRequired, "spec.containers[0].resources.limits[vpc.amazonaws.com/efa]"},
		}},
	} {
		t.Run(test.name, func(t *testing.T) {
			role := &Role{Name: "r", Image: "i", Entrypoint: "e", PortMap: map[string]int{"rdzv": 29500, "metrics": 9090},
				Resource: Resource{CPU: 2, GPU: 4, MemMB: 1000}}
			pod := rolePod(role, "r-0", macroValues{}, ptr(DefaultConfig()), false)
			pod.Spec.DNSPolicy = corev1.DNSClusterFirst
			pod.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
			pod.Spec.Containers[0].Ports[0].Protocol = corev1.ProtocolTCP
			test.change(pod)
			var got []problem
			for _, e := range validatePod(pod, &nameChecks{}, nil, false) {
				got = append(got, problem{e.Type, e.Field})
			}
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidatePodSkipsBookkeeping checks that the bookkeeping labels, which Build checks
// once for the job, are not checked in each pod, unless an overlay's value took their place.
func TestValidatePodSkipsBookkeeping(t *testing.T) {
	pod := rolePod(&Role{Name: "r", Image: "i", Entrypoint: "e", Resource: Resource{CPU: 1, MemMB: 1000}},
		"r-0", macroValues{}, ptr(DefaultConfig()), false)
	pod.Labels = map[string]string{LabelInstance: "Bad_Id!", "team": "a b"}
	var got []string
	for _, e := range validatePod(pod, &nameChecks{}, map[string]string{LabelInstance: "Bad_Id!"}, false) {
		got = append(got, e.Field)
	}
	if diff := cmp.Diff([]string{"metadata.labels[team]"}, got); diff != "" {
		t.Errorf("errors mismatch (-want +got):\n%s", diff)
	}
}

// TestValidatePodChecked checks that a pod the overlays checked already, as a pod template,
// is checked only for the metadata that Volcano owns.
func TestValidatePodChecked(t *testing.T) {
	pod := rolePod(&Role{Name: "r", Image: "i", Entrypoint: "e", Resource: Resource{CPU: 1, MemMB: 1000}},
		"r-0", macroValues{}, ptr(DefaultConfig()), false)
	pod.Labels = map[string]string{"team": "a b"}
	pod.Name, pod.Namespace = "mine", ""
	for _, test := range []struct {
		checked bool
		want    []string
	}{
		{false, []string{"metadata.name", "metadata.labels[team]"}},
		{true, []string{"metadata.name"}},
	} {
		var got []string
		for _, e := range validatePod(pod, &nameChecks{}, nil, test.checked) {
			got = append(got, e.Field)
		}
		if diff := cmp.Diff(test.want, got); diff != "" {
			t.Errorf("checked %v: errors mismatch (-want +got):\n%s", test.checked, diff)
		}
	}
}
