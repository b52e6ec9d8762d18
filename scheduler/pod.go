package scheduler

// This file turns one replica of a role into a pod, with TorchX's semantics.

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	shmVolume = "dshm"
	shmPath   = "/dev/shm"
	gpuDevice = "nvidia.com/gpu"
	// IstioInjectAnnotation is set to "false" on every pod: a sidecar would keep a finished
	// replica's pod running.
	IstioInjectAnnotation = "sidecar.istio.io/inject"
)

// rolePod returns the pod of one replica of a role, before overlays. name is the task's name,
// which is also the container's.
func rolePod(r *Role, name string, m macroValues, cfg *Config, rank0 bool) *corev1.Pod {
	return newRoleParts(r, cfg).pod(r, name, m, rank0)
}

// roleParts are the parts of the pods of a role's replicas that no macro changes: their
// resources, ports, volumes and mounts, the same for every replica. The pods of a role share
// them: nothing changes a pod's parts once it is built (overlays get copies, as Starlark
// values, and return new pods).
type roleParts struct {
	spec      corev1.PodSpec // all but the containers
	resources corev1.ResourceRequirements
	ports     []corev1.ContainerPort
	mounts    []corev1.VolumeMount
	security  *corev1.SecurityContext
}

// newRoleParts returns the parts of the pods of role r.
func newRoleParts(r *Role, cfg *Config) *roleParts {
	rp := &roleParts{resources: resources(&r.Resource, cfg)}
	rp.spec = corev1.PodSpec{
		RestartPolicy:      corev1.RestartPolicyNever,
		ServiceAccountName: cfg.ServiceAccount,
		PriorityClassName:  cfg.PriorityClass,
	}
	for _, port := range sortedKeys(r.PortMap) {
		rp.ports = append(rp.ports, corev1.ContainerPort{Name: port, ContainerPort: int32(r.PortMap[port])})
	}
	// The shared memory volume, then one per mount: sized once, as a Volume is large.
	rp.spec.Volumes = append(make([]corev1.Volume, 0, 1+len(r.Mounts)), corev1.Volume{
		Name:         shmVolume,
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}},
	})
	rp.mounts = append(make([]corev1.VolumeMount, 0, 1+len(r.Mounts)), corev1.VolumeMount{Name: shmVolume, MountPath: shmPath})
	for i, mnt := range r.Mounts {
		vol := corev1.Volume{Name: "mount-" + strconv.Itoa(i)}
		vm := corev1.VolumeMount{Name: vol.Name, MountPath: mnt.Dst, ReadOnly: mnt.ReadOnly}
		switch mnt.Type {
		case MountBind:
			vol.HostPath = &corev1.HostPathVolumeSource{Path: mnt.Src}
		case MountVolume:
			vol.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: mnt.Src, ReadOnly: mnt.ReadOnly}
		case MountDevice:
			vol.HostPath = &corev1.HostPathVolumeSource{Path: mnt.Src}
			if vm.MountPath == "" {
				vm.MountPath = mnt.Src
			}
			perm := mnt.Perm
			if perm == "" {
				perm = "rwm"
			}
			vm.ReadOnly = !strings.ContainsAny(perm, "wm")
			rp.security = &corev1.SecurityContext{Privileged: ptr(true)}
		}
		rp.spec.Volumes = append(rp.spec.Volumes, vol)
		rp.mounts = append(rp.mounts, vm)
	}
	if it, ok := r.Resource.Capabilities[InstanceTypeLabel]; ok {
		rp.spec.NodeSelector = map[string]string{InstanceTypeLabel: it}
	}
	return rp
}

// pod returns the pod of one replica of role r, whose parts rp are, as rolePod does.
func (rp *roleParts) pod(r *Role, name string, m macroValues, rank0 bool) *corev1.Pod {
	c := corev1.Container{
		Name:            name,
		Image:           r.Image,
		Command:         append([]string{r.Entrypoint}, expandAll(m, r.Args)...),
		Resources:       rp.resources,
		Ports:           rp.ports,
		VolumeMounts:    rp.mounts,
		SecurityContext: rp.security,
	}
	if rank0 {
		c.Env = append(c.Env, corev1.EnvVar{Name: Rank0HostEnv, Value: "localhost"})
	}
	for _, e := range r.Env {
		if path, ok := strings.CutPrefix(e.Value, FieldPathPrefix); ok {
			c.Env = append(c.Env, corev1.EnvVar{Name: e.Name, ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path},
			}})
			continue
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: e.Name, Value: m.expand(e.Value)})
	}
	meta := metav1.ObjectMeta{
		Annotations: map[string]string{IstioInjectAnnotation: "false"},
	}
	if len(r.Metadata.Labels) > 0 {
		meta.Labels = make(map[string]string)
		for k, v := range r.Metadata.Labels {
			meta.Labels[k] = m.expand(v)
		}
	}
	for k, v := range r.Metadata.Annotations {
		meta.Annotations[k] = m.expand(v)
	}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: meta,
		Spec:       rp.spec,
	}
	pod.Spec.Containers = []corev1.Container{c}
	return pod
}

// resources returns the container's requests and limits: CPU limit cpu*1000 millicores and
// request the limit minus reserved_millicpu; memory limit mem_mb M (10^6 bytes) and request
// the limit minus reserved_memmb; both requests at least 0 and at most the limit (a
// negative reservation, which Build reports, adds nothing). GPUs go in both, other devices in
// limits only. TorchX truncates cpu*1000; this rounds, so that 4.35 CPUs are 4350m, not 4349m.
func resources(res *Resource, cfg *Config) corev1.ResourceRequirements {
	mcpu := int64(math.Round(res.CPU * 1000))
	limits := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(mcpu, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewScaledQuantity(res.MemMB, resource.Mega),
	}
	requests := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(min(max(mcpu-cfg.ReservedMilliCPU, 0), mcpu), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewScaledQuantity(min(max(res.MemMB-cfg.ReservedMemMB, 0), res.MemMB), resource.Mega),
	}
	if res.GPU > 0 {
		q := *resource.NewQuantity(int64(res.GPU), resource.DecimalSI)
		limits[gpuDevice] = q
		requests[gpuDevice] = q
	}
	for name, n := range res.Devices {
		limits[corev1.ResourceName(name)] = *resource.NewQuantity(int64(n), resource.DecimalSI)
	}
	if cfg.EFADeviceCount != nil {
		if *cfg.EFADeviceCount == 0 {
			delete(limits, EFADevice)
		} else {
			limits[EFADevice] = *resource.NewQuantity(*cfg.EFADeviceCount, resource.DecimalSI)
		}
	}
	return corev1.ResourceRequirements{Limits: limits, Requests: requests}
}

// expandAll substitutes the macros in each of ss.
func expandAll(m macroValues, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = m.expand(s)
	}
	return out
}

// rank0Env returns the name of the variable that holds the host of replica 0 of the first
// role, as seen from a replica: STARPOD_RANK0_HOST on that replica itself, else the variable
// that Volcano's svc plugin sets for the task firstTask.
func rank0Env(firstTask string, rank0 bool) string {
	if rank0 {
		return Rank0HostEnv
	}
	return fmt.Sprintf("VC_%s_HOSTS", strings.ToUpper(strings.ReplaceAll(firstTask, "-", "_")))
}

func ptr[T any](v T) *T { return &v }
