package scheduler

// This file defines the names starpod gives: the app id of a job (the Volcano Job's name) and
// the names of its tasks.

import (
	"crypto/rand"
	"fmt"
	"io"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// taskName returns the name of the task of a replica: <role>-<replica>.
func taskName(role string, id int) string { return role + "-" + strconv.Itoa(id) }

// maxNameLen is the longest DNS label: pod names, which are also host names, must fit.
const maxNameLen = 63

// suffixLen is the length of the random suffix of a generated app id.
const suffixLen = 8

// jobName returns the app id: opts.AppID, checked, or the normalised app name (cut to fit)
// with a random suffix. Volcano names the pod of task t <job>-<t>-0 and uses it as the pod's
// host name, which must be a DNS label of at most 63 characters; its admission webhook checks
// <job>-<t>-<i> instead, where i is the task's index in the job, which is never shorter. The
// svc plugin also names a Service after the job, which must be a DNS-1035 label.
func jobName(app *App, opts BuildOptions) (string, error) {
	longest := "" // the longest "-<task>-<index>"
	i := 0
	for _, r := range app.Roles {
		if !r.validName() || r.Replicas() < 1 || r.Replicas() > maxReplicas || i+r.Replicas() > MaxTasks {
			// The spec is invalid, and says so; a guess at this role's task names would
			// give an error that a fixed spec might not have.
			continue
		}
		for id := range r.Replicas() {
			if s := "-" + taskName(r.Name, id) + "-" + strconv.Itoa(i); len(s) >= len(longest) {
				longest = s
			}
			i++
		}
	}
	return appID(app, opts, longest, "as Volcano checks it")
}

// appID returns the app id: opts.AppID, checked, or the normalised app name (cut to fit)
// with a random suffix, so that the app id followed by longest, the longest suffix of a pod
// name, is at most a DNS label long. how says whose pod name it is, for errors.
func appID(app *App, opts BuildOptions, longest, how string) (string, error) {
	budget := maxNameLen - len(longest)
	if opts.AppID != "" {
		if msgs := validation.IsDNS1035Label(opts.AppID); len(msgs) > 0 {
			return opts.AppID, fmt.Errorf("app id %q: %s", opts.AppID, msgs[0])
		}
		if len(opts.AppID) > budget {
			return opts.AppID, fmt.Errorf("app id %q: pod name %s%s (%s) is %d characters, want at most %d",
				opts.AppID, opts.AppID, longest, how, len(opts.AppID)+len(longest), maxNameLen)
		}
		return opts.AppID, nil
	}
	prefix := normalize(app.Name)
	if n := budget - 1 - suffixLen; len(prefix) > n {
		if n < 1 {
			return "", fmt.Errorf("roles: pod name suffix %s leaves no room for a job name in a %d-character pod name",
				longest, maxNameLen)
		}
		prefix = strings.TrimRight(prefix[:n], "-")
	}
	r := opts.Rand
	if r == nil {
		r = rand.Reader
	}
	suffix, err := randomSuffix(r)
	if err != nil {
		return "", fmt.Errorf("app id: %w", err)
	}
	return prefix + "-" + suffix, nil
}

// jobSetName returns the app id of a JobSet, as jobName does: JobSet names the Job of
// replicated job <role> <app id>-<role>-0, and its pod of completion index i
// <app id>-<role>-0-<i>, which is the pod's host name and must be a DNS label.
func jobSetName(app *App, opts BuildOptions) (string, error) {
	longest := ""
	for _, r := range app.Roles {
		if !r.validName() || r.Replicas() < 1 || r.Replicas() > maxReplicas {
			continue // the spec is invalid, and says so
		}
		if s := "-" + r.Name + "-0-" + strconv.Itoa(r.Replicas()-1); len(s) >= len(longest) {
			longest = s
		}
	}
	return appID(app, opts, longest, "the host name JobSet gives it")
}

func randomSuffix(r io.Reader) (string, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, suffixLen)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b), nil
}

// normalize turns an app name into a DNS-1035 label prefix: lower case; '_', '.' and spaces
// become '-'; other characters outside [a-z0-9-] are dropped; runs of '-' collapse; it starts
// with a letter and does not end with '-'. The result may be empty.
func normalize(name string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteRune(c)
		case c == '-' || c == '_' || c == '.' || c == ' ':
			if s := b.String(); s != "" && !strings.HasSuffix(s, "-") {
				b.WriteByte('-')
			}
		}
	}
	s := strings.TrimLeft(b.String(), "0123456789-")
	return strings.TrimRight(s, "-")
}
