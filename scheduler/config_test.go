package scheduler_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/starpod/starpod/scheduler"
)

func TestDefaultConfig(t *testing.T) {
	want := scheduler.Config{
		Namespace:        "default",
		Queue:            "default",
		SchedulerName:    "volcano",
		ReservedMilliCPU: 100,
		ReservedMemMB:    1024,
	}
	if diff := cmp.Diff(want, scheduler.DefaultConfig()); diff != "" {
		t.Errorf("DefaultConfig mismatch (-want +got):\n%s", diff)
	}
}

func TestParseConfig(t *testing.T) {
	zero, three := int64(0), int64(3)
	for _, test := range []struct {
		settings []string
		want     func(c *scheduler.Config)
		err      string
	}{
		{nil, func(c *scheduler.Config) {}, ""},
		{[]string{"namespace=ml,queue=gpu", "service_account=sa,priority_class=high"}, func(c *scheduler.Config) {
			c.Namespace, c.Queue, c.ServiceAccount, c.PriorityClass = "ml", "gpu", "sa", "high"
		}, ""},
		{[]string{"scheduler_name=kube-batch,reserved_millicpu=0,reserved_memmb=0,efa_device_count=0"}, func(c *scheduler.Config) {
			c.SchedulerName, c.ReservedMilliCPU, c.ReservedMemMB, c.EFADeviceCount = "kube-batch", 0, 0, &zero
		}, ""},
		{[]string{"efa_device_count=3,", "queue=a", "queue=b"}, func(c *scheduler.Config) {
			c.EFADeviceCount, c.Queue = &three, "b"
		}, ""},
		{[]string{"queu=x"}, nil, `unknown cfg key "queu"; did you mean "queue"? (see starpod runopts kubernetes)`},
		{[]string{"nonsense=x"}, nil, `unknown cfg key "nonsense" (see starpod runopts kubernetes)`},
		{[]string{"namespace"}, nil, `cfg "namespace": got no value, want key=value`},
		{[]string{"namespace=Not_A_Label"}, nil, `cfg namespace: got "Not_A_Label", want a DNS label: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		{[]string{"reserved_millicpu=-1"}, nil, `cfg reserved_millicpu: got "-1", want an integer >= 0`},
		{[]string{"efa_device_count=many"}, nil, `cfg efa_device_count: got "many", want an integer >= 0`},
	} {
		got, err := scheduler.ParseConfig(test.settings)
		if test.err != "" {
			if err == nil || err.Error() != test.err {
				t.Errorf("ParseConfig(%q): got error %v, want %s", test.settings, err, test.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseConfig(%q): %v", test.settings, err)
			continue
		}
		want := scheduler.DefaultConfig()
		test.want(&want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ParseConfig(%q) mismatch (-want +got):\n%s", test.settings, diff)
		}
	}
}

func TestConfigOptionsDocumented(t *testing.T) {
	// Every key the issue names is listed, with help, in runopts order.
	var names []string
	for _, o := range scheduler.ConfigOptions {
		names = append(names, o.Name)
		if o.Help == "" {
			t.Errorf("option %s has no help", o.Name)
		}
	}
	want := []string{"namespace", "queue", "service_account", "priority_class", "scheduler_name",
		"reserved_millicpu", "reserved_memmb", "efa_device_count"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("options mismatch (-want +got):\n%s", diff)
	}
}
