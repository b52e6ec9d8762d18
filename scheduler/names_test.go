package scheduler

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestExpand checks the substitution of macros against what TorchX's (Python's
// string.Template.safe_substitute) gives for the same text.
func TestExpand(t *testing.T) {
	m := macroValues{"app_id": "demo", "replica_id": "2", "num_replicas": "4", "rank0_env": "$(VC_A_0_HOSTS)"}
	for _, test := range []struct{ in, want string }{
		{"", ""},
		{"plain $HOME $(VAR) $$(VAR)", "plain $HOME $(VAR) $(VAR)"},
		{"${app_id}-${replica_id}/${num_replicas}", "demo-2/4"},
		{"$app_id/$replica_id-$num_replicas", "demo/2-4"},
		{"--master=${rank0_env}:29500", "--master=$(VC_A_0_HOSTS):29500"},
		{"$${app_id} and ${app_id}", "${app_id} and demo"},
		{"$${HOME}", "${HOME}"},
		{"$$${app_id}", "$demo"},
		{"a$$b", "a$b"},
		{"$$$$", "$$"},
		{"$app_idx ${app_idx} $APP_ID $_ $1", "$app_idx ${app_idx} $APP_ID $_ $1"},
		{"model.dir=${oc.env:HOME}", "model.dir=${oc.env:HOME}"},
		{"${replica} ${HOME} ${", "${replica} ${HOME} ${"},
		{"a ${app_id", "a ${app_id"},
		{"${app_id}}", "demo}"},
		{"${ app_id}", "${ app_id}"},
		{"${a${app_id}}", "${ademo}"},
		{"$", "$"},
		{"x$", "x$"},
		{"$$", "$"},
	} {
		if got := m.expand(test.in); got != test.want {
			t.Errorf("expand(%q) = %q, want %q", test.in, got, test.want)
		}
		if got := expandedLen(m, test.in); got != int64(len(test.want)) {
			t.Errorf("expandedLen(%q) = %d, want %d", test.in, got, len(test.want))
		}
		if errs := checkMacros(test.in, field.NewPath("x"), true); len(errs) > 0 {
			t.Errorf("checkMacros(%q): %v", test.in, errs)
		}
	}
}

func TestRank0EnvOnlyInArgs(t *testing.T) {
	for _, s := range []string{"${rank0_env}:29500", "$rank0_env", "${rank0_env} ${rank0_env}"} {
		errs := checkMacros(s, field.NewPath("env"), false)
		if len(errs) != 1 || !strings.Contains(errs[0].Detail, "works only in args") {
			t.Errorf("%q: got %v, want an error", s, errs)
		}
	}
	for _, s := range []string{"$${rank0_env}", "${rank0_envx}", "rank0_env"} {
		if errs := checkMacros(s, field.NewPath("env"), false); len(errs) > 0 {
			t.Errorf("%q: got %v, want none", s, errs)
		}
	}
}

func TestNormalize(t *testing.T) {
	for _, test := range []struct{ in, want string }{
		{"llama-ft", "llama-ft"},
		{"PS_Train", "ps-train"},
		{"My App v1.2", "my-app-v1-2"},
		{"7b--model__x", "b-model-x"},
		{"--Ünïcode!", "ncode"},
		{"123", ""},
		{"a-", "a"},
	} {
		if got := normalize(test.in); got != test.want {
			t.Errorf("normalize(%q) = %q, want %q", test.in, got, test.want)
		}
	}
}

func TestJobName(t *testing.T) {
	one := 1
	twelve := 12
	app := &App{Name: strings.Repeat("Very Long Name ", 10), Roles: []Role{
		{Name: "trainer", NumReplicas: &twelve}, {Name: "ps", NumReplicas: &one},
	}}
	zeros := bytes.NewReader(make([]byte, suffixLen))
	got, err := jobName(app, BuildOptions{Rand: zeros})
	if err != nil {
		t.Fatal(err)
	}
	// The longest pod name that Volcano checks, <job>-trainer-11-11, fits 63 characters.
	if want := "very-long-name-very-long-name-very-long-aaaaaaaa"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if n := len(got + "-trainer-11-11"); n > 63 {
		t.Errorf("pod name is %d characters", n)
	}

	// Two random ids differ.
	a, _ := jobName(app, BuildOptions{})
	b, _ := jobName(app, BuildOptions{})
	if a == b {
		t.Errorf("two generated ids are both %q", a)
	}

	for _, test := range []struct{ id, err string }{
		{"demo", ""},
		{"Demo", `app id "Demo": a DNS-1035 label must consist of lower case alphanumeric characters`},
		{"1demo", `app id "1demo": a DNS-1035 label`},
		{strings.Repeat("x", 50), `pod name ` + strings.Repeat("x", 50) + `-trainer-11-11 (as Volcano checks it) is 64 characters, want at most 63`},
		{strings.Repeat("x", 49), ""},
	} {
		_, err := jobName(app, BuildOptions{AppID: test.id})
		if test.err == "" && err != nil || test.err != "" && (err == nil || !strings.Contains(err.Error(), test.err)) {
			t.Errorf("jobName(AppID %q): got error %v, want %q", test.id, err, test.err)
		}
	}
}
