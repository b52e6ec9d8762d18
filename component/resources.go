package component

// This file defines the named resources: TorchX's generic ones and its AWS instance table.

import (
	"sort"

	"github.com/starpod/starpod/scheduler"
)

// awsGiB is the MB in a GiB of an AWS instance as TorchX counts it: 96% of 1024, what is left
// after the memory the instance's own agents take.
const awsGiB = 1024 * 96 / 100

// NeuronDevice is the resource name of AWS Neuron (Trainium, Inferentia) devices.
const NeuronDevice = "aws.amazon.com/neurondevice"

// genericResources are TorchX's generic named resources, which map to no instance type.
var genericResources = map[string]scheduler.Resource{
	"gpu.small":  {CPU: 8, GPU: 1, MemMB: 32 * 1024},
	"gpu.medium": {CPU: 16, GPU: 2, MemMB: 64 * 1024},
	"gpu.large":  {CPU: 32, GPU: 4, MemMB: 128 * 1024},
	"gpu.xlarge": {CPU: 64, GPU: 8, MemMB: 256 * 1024},
	"cpu.nano":   {CPU: 1, MemMB: 512},
	"cpu.micro":  {CPU: 1, MemMB: 1024},
	"cpu.small":  {CPU: 1, MemMB: 2 * 1024},
	"cpu.medium": {CPU: 2, MemMB: 4 * 1024},
	"cpu.large":  {CPU: 2, MemMB: 8 * 1024},
	"cpu.xlarge": {CPU: 8, MemMB: 32 * 1024},
}

// awsInstance is one row of the AWS table: vCPUs, GPUs, memory in GiB, EFA and Neuron devices.
type awsInstance struct {
	cpu, gpu, memGiB, efa, neuron int
}

// awsInstances is TorchX's AWS instance table, by instance type.
var awsInstances = map[string]awsInstance{
	"t3.medium":          {2, 0, 4, 0, 0},
	"m5.large":           {2, 0, 8, 0, 0},
	"m5.xlarge":          {4, 0, 16, 0, 0},
	"m5.2xlarge":         {8, 0, 32, 0, 0},
	"m5.4xlarge":         {16, 0, 64, 0, 0},
	"m5.8xlarge":         {32, 0, 128, 0, 0},
	"m5.12xlarge":        {48, 0, 192, 0, 0},
	"m5.16xlarge":        {64, 0, 256, 0, 0},
	"m5.24xlarge":        {96, 0, 384, 0, 0},
	"m5.metal":           {96, 0, 384, 0, 0},
	"m5d.large":          {2, 0, 8, 0, 0},
	"m5d.xlarge":         {4, 0, 16, 0, 0},
	"m5d.2xlarge":        {8, 0, 32, 0, 0},
	"m5d.4xlarge":        {16, 0, 64, 0, 0},
	"m5d.8xlarge":        {32, 0, 128, 0, 0},
	"m5d.12xlarge":       {48, 0, 192, 0, 0},
	"m5d.16xlarge":       {64, 0, 256, 0, 0},
	"m5d.24xlarge":       {96, 0, 384, 0, 0},
	"m5d.metal":          {96, 0, 384, 0, 0},
	"c5.18xlarge":        {72, 0, 142, 0, 0},
	"p3.2xlarge":         {8, 1, 61, 0, 0},
	"p3.8xlarge":         {32, 4, 244, 0, 0},
	"p3.16xlarge":        {64, 8, 488, 0, 0},
	"p3dn.24xlarge":      {96, 8, 768, 1, 0},
	"p4d.24xlarge":       {96, 8, 1152, 4, 0},
	"p4de.24xlarge":      {96, 8, 1152, 4, 0},
	"p5.48xlarge":        {192, 8, 2048, 32, 0},
	"p5e.48xlarge":       {192, 8, 2048, 32, 0},
	"p5en.48xlarge":      {192, 8, 2048, 16, 0},
	"p6-b200.48xlarge":   {192, 8, 2048, 8, 0},
	"p6-b300.48xlarge":   {192, 8, 4096, 16, 0},
	"p6e-gb200.36xlarge": {144, 4, 960, 16, 0},
	"g4dn.xlarge":        {4, 1, 16, 0, 0},
	"g4dn.2xlarge":       {8, 1, 32, 0, 0},
	"g4dn.4xlarge":       {16, 1, 64, 0, 0},
	"g4dn.8xlarge":       {32, 1, 128, 1, 0},
	"g4dn.12xlarge":      {48, 4, 192, 1, 0},
	"g4dn.16xlarge":      {64, 1, 256, 1, 0},
	"g4dn.metal":         {96, 8, 384, 1, 0},
	"g5.xlarge":          {4, 1, 16, 0, 0},
	"g5.2xlarge":         {8, 1, 32, 0, 0},
	"g5.4xlarge":         {16, 1, 64, 0, 0},
	"g5.8xlarge":         {32, 1, 128, 1, 0},
	"g5.12xlarge":        {48, 4, 192, 1, 0},
	"g5.16xlarge":        {64, 1, 256, 1, 0},
	"g5.24xlarge":        {96, 4, 384, 1, 0},
	"g5.48xlarge":        {192, 8, 768, 1, 0},
	"g6e.xlarge":         {4, 1, 32, 0, 0},
	"g6e.2xlarge":        {8, 1, 64, 0, 0},
	"g6e.4xlarge":        {16, 1, 128, 0, 0},
	"g6e.8xlarge":        {32, 1, 256, 0, 0},
	"g6e.12xlarge":       {48, 4, 384, 0, 0},
	"g6e.16xlarge":       {64, 1, 512, 0, 0},
	"g6e.24xlarge":       {96, 4, 768, 2, 0},
	"g6e.48xlarge":       {192, 8, 1536, 4, 0},
	"trn1.2xlarge":       {8, 0, 32, 0, 1},
	"trn1.32xlarge":      {128, 0, 512, 8, 16},
	"inf2.xlarge":        {4, 0, 16, 0, 1},
	"inf2.8xlarge":       {32, 0, 128, 0, 1},
	"inf2.24xlarge":      {96, 0, 384, 0, 6},
	"inf2.48xlarge":      {192, 0, 768, 0, 12},
}

// NamedResources returns the builtin named resources, a fresh map: the generic ones
// (gpu.small, gpu.medium, gpu.large, gpu.xlarge, cpu.nano, cpu.micro, cpu.small, cpu.medium,
// cpu.large, cpu.xlarge) and, for each AWS instance type T in TorchX's table, "aws_T", whose
// capabilities name the instance type (node.kubernetes.io/instance-type), whose memory is
// 96% of the instance's, and whose devices are its EFA (vpc.amazonaws.com/efa) and Neuron
// (aws.amazon.com/neurondevice) devices.
func NamedResources() map[string]scheduler.Resource {
	out := make(map[string]scheduler.Resource, len(genericResources)+len(awsInstances))
	for k, r := range genericResources {
		out[k] = r
	}
	for t, i := range awsInstances {
		r := scheduler.Resource{CPU: float64(i.cpu), GPU: i.gpu, MemMB: int64(i.memGiB * awsGiB),
			Capabilities: map[string]string{scheduler.InstanceTypeLabel: t}}
		if i.efa > 0 || i.neuron > 0 {
			r.Devices = make(map[string]int)
			if i.efa > 0 {
				r.Devices[scheduler.EFADevice] = i.efa
			}
			if i.neuron > 0 {
				r.Devices[NeuronDevice] = i.neuron
			}
		}
		out["aws_"+t] = r
	}
	return out
}

// ResourceNames returns the names of the builtin named resources, sorted.
func ResourceNames() []string {
	var names []string
	for k := range NamedResources() {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
