package cluster

// This file defines handles, the names of apps on a cluster, and log targets.

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/starpod/starpod/scheduler"
)

// Scheme is the scheme of the handles of apps run by Volcano; JobSetScheme that of apps run
// as JobSets.
const (
	Scheme       = "kubernetes://"
	JobSetScheme = scheduler.SchedulerJobSet + "://"
)

// A Handle names an app on a cluster: the namespace and name (app id) of its Volcano Job or
// JobSet. Its text form is kubernetes://<namespace>/<app_id> for a Volcano Job and
// jobset://<namespace>/<app_id> for a JobSet.
type Handle struct {
	Namespace string // "" in a bare app id: the client's namespace applies
	AppID     string
	// Scheduler is "" for a Volcano Job (kubernetes://) or a bare app id, which names a
	// Volcano Job if there is one, else a JobSet; scheduler.SchedulerJobSet for a JobSet.
	Scheduler string
}

// IsJobSet reports whether h names a JobSet.
func (h Handle) IsJobSet() bool { return h.Scheduler == scheduler.SchedulerJobSet }

// String returns the handle as kubernetes://<namespace>/<app_id> (or jobset://...), or the
// bare app id if it has no namespace.
func (h Handle) String() string {
	if h.Namespace == "" {
		return h.AppID
	}
	if h.IsJobSet() {
		return JobSetScheme + h.Namespace + "/" + h.AppID
	}
	return Scheme + h.Namespace + "/" + h.AppID
}

// ParseHandle parses kubernetes://<namespace>/<app_id>, jobset://<namespace>/<app_id>, or a
// bare app id whose namespace and scheduler are left empty.
func ParseHandle(s string) (Handle, error) {
	h, rest, err := parseHandlePrefix(s)
	if err != nil {
		return Handle{}, err
	}
	if len(rest) > 0 {
		if h.Namespace == "" {
			return Handle{}, fmt.Errorf("handle %q: got %q, want an app id or %s<namespace>/<app_id>", s, s, Scheme)
		}
		return Handle{}, fmt.Errorf("handle %q: got %d path elements after %s, want <namespace>/<app_id>", s, 2+len(rest), h.scheme())
	}
	return h, nil
}

// A LogTarget selects the pods of an app whose logs to show: all of them, one role's, or one
// replica's.
type LogTarget struct {
	Handle
	Role    string // "" for every role
	Replica int    // -1 for every replica of Role
}

// String returns the target in the form ParseLogTarget reads.
func (t LogTarget) String() string {
	s := t.Handle.String()
	if t.Role != "" {
		s += "/" + t.Role
		if t.Replica >= 0 {
			s += "/" + strconv.Itoa(t.Replica)
		}
	}
	return s
}

// ParseLogTarget parses HANDLE[/ROLE[/REPLICA]], where HANDLE is as ParseHandle reads it.
func ParseLogTarget(s string) (LogTarget, error) {
	h, rest, err := parseHandlePrefix(s)
	if err != nil {
		return LogTarget{}, err
	}
	t := LogTarget{Handle: h, Replica: -1}
	if len(rest) > 2 {
		return LogTarget{}, fmt.Errorf("log target %q: got %d elements after the app id, want at most ROLE/REPLICA", s, len(rest))
	}
	if len(rest) > 0 {
		t.Role = rest[0]
		if t.Role == "" {
			return LogTarget{}, fmt.Errorf("log target %q: got an empty role name, want HANDLE[/ROLE[/REPLICA]]", s)
		}
	}
	if len(rest) > 1 {
		n, err := strconv.Atoi(rest[1])
		if err != nil || n < 0 || rest[1] != strconv.Itoa(n) {
			return LogTarget{}, fmt.Errorf("log target %q: got replica %q, want a replica id (0, 1, ...)", s, rest[1])
		}
		t.Replica = n
	}
	return t, nil
}

// parseHandlePrefix parses a handle at the start of s and returns the further
// slash-separated elements of s.
func parseHandlePrefix(s string) (Handle, []string, error) {
	var h Handle
	var parts []string
	after, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		if after, ok = strings.CutPrefix(s, JobSetScheme); ok {
			h.Scheduler = scheduler.SchedulerJobSet
		}
	}
	if ok {
		parts = strings.Split(after, "/")
		if len(parts) < 2 {
			return h, nil, fmt.Errorf("handle %q: got %d path element after %s, want <namespace>/<app_id>", s, len(parts), h.scheme())
		}
		h.Namespace = parts[0]
		if errs := validation.IsDNS1123Label(h.Namespace); len(errs) > 0 {
			return h, nil, fmt.Errorf("handle %q: got namespace %q, want a DNS label: %s", s, h.Namespace, errs[0])
		}
		parts = parts[1:]
	} else {
		if i := strings.Index(s, "://"); i >= 0 {
			return h, nil, fmt.Errorf("handle %q: got scheme %q, want %s<namespace>/<app_id> or %s<namespace>/<app_id>", s, s[:i+3], Scheme, JobSetScheme)
		}
		parts = strings.Split(s, "/")
	}
	h.AppID = parts[0]
	if h.AppID == "" {
		return h, nil, fmt.Errorf("handle %q: got an empty app id, want %s<namespace>/<app_id> or an app id", s, Scheme)
	}
	if errs := validation.IsDNS1123Subdomain(h.AppID); len(errs) > 0 {
		return h, nil, fmt.Errorf("handle %q: got app id %q, want a Kubernetes object name: %s", s, h.AppID, errs[0])
	}
	return h, parts[1:], nil
}

// scheme returns the scheme of h's text form.
func (h Handle) scheme() string {
	if h.IsJobSet() {
		return JobSetScheme
	}
	return Scheme
}
