package cluster

import (
	"strings"
	"testing"
)

func TestParseHandle(t *testing.T) {
	for _, test := range []struct {
		in   string
		want Handle
	}{
		{"kubernetes://ml/llama-ft-x7k2", Handle{"ml", "llama-ft-x7k2", ""}},
		{"kubernetes://default/a", Handle{"default", "a", ""}},
		{"llama-ft-x7k2", Handle{"", "llama-ft-x7k2", ""}},
	} {
		got, err := ParseHandle(test.in)
		if err != nil {
			t.Errorf("ParseHandle(%q): %v", test.in, err)
			continue
		}
		if got != test.want {
			t.Errorf("ParseHandle(%q) = %+v, want %+v", test.in, got, test.want)
		}
		if s := got.String(); s != test.in {
			t.Errorf("ParseHandle(%q).String() = %q", test.in, s)
		}
	}
}

func TestParseHandleErrors(t *testing.T) {
	for _, test := range []struct{ in, want string }{
		{"", `handle "": got an empty app id, want kubernetes://<namespace>/<app_id> or an app id`},
		{"kubernetes://ml", `handle "kubernetes://ml": got 1 path element after kubernetes://, want <namespace>/<app_id>`},
		{"kubernetes://ml/", `handle "kubernetes://ml/": got an empty app id`},
		{"kubernetes://ml/a/b", `handle "kubernetes://ml/a/b": got 3 path elements after kubernetes://, want <namespace>/<app_id>`},
		{"kubernetes://ML/a", `handle "kubernetes://ML/a": got namespace "ML", want a DNS label`},
		{"kubernetes://ml/A_b", `handle "kubernetes://ml/A_b": got app id "A_b", want a Kubernetes object name`},
		{"slurm://ml/a", `handle "slurm://ml/a": got scheme "slurm://", want kubernetes://<namespace>/<app_id>`},
		{"a/b", `handle "a/b": got "a/b", want an app id or kubernetes://<namespace>/<app_id>`},
	} {
		_, err := ParseHandle(test.in)
		if err == nil {
			t.Errorf("ParseHandle(%q): got no error, want %q", test.in, test.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), test.want) {
			t.Errorf("ParseHandle(%q): got error %q, want prefix %q", test.in, err, test.want)
		}
	}
}

func TestParseLogTarget(t *testing.T) {
	for _, test := range []struct {
		in   string
		want LogTarget
	}{
		{"kubernetes://ml/app", LogTarget{Handle{"ml", "app", ""}, "", -1}},
		{"kubernetes://ml/app/trainer", LogTarget{Handle{"ml", "app", ""}, "trainer", -1}},
		{"kubernetes://ml/app/trainer/3", LogTarget{Handle{"ml", "app", ""}, "trainer", 3}},
		{"app/trainer/0", LogTarget{Handle{"", "app", ""}, "trainer", 0}},
		{"app", LogTarget{Handle{"", "app", ""}, "", -1}},
	} {
		got, err := ParseLogTarget(test.in)
		if err != nil {
			t.Errorf("ParseLogTarget(%q): %v", test.in, err)
			continue
		}
		if got != test.want {
			t.Errorf("ParseLogTarget(%q) = %+v, want %+v", test.in, got, test.want)
		}
		if s := got.String(); s != test.in {
			t.Errorf("ParseLogTarget(%q).String() = %q", test.in, s)
		}
	}
	for _, test := range []struct{ in, want string }{
		{"app/trainer/x", `log target "app/trainer/x": got replica "x", want a replica id (0, 1, ...)`},
		{"app/trainer/-1", `log target "app/trainer/-1": got replica "-1", want a replica id`},
		{"app/trainer/01", `log target "app/trainer/01": got replica "01", want a replica id`},
		{"app//0", `log target "app//0": got an empty role name, want HANDLE[/ROLE[/REPLICA]]`},
		{"kubernetes://ml/app/r/0/x", `log target "kubernetes://ml/app/r/0/x": got 3 elements after the app id, want at most ROLE/REPLICA`},
		{"kubernetes://ml", `handle "kubernetes://ml": got 1 path element`},
	} {
		_, err := ParseLogTarget(test.in)
		if err == nil {
			t.Errorf("ParseLogTarget(%q): got no error, want %q", test.in, test.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), test.want) {
			t.Errorf("ParseLogTarget(%q): got error %q, want prefix %q", test.in, err, test.want)
		}
	}
}
