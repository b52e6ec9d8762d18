package cluster

// This file defines Wait, which follows an app until it ends, and Progress, which shows the
// states it passes through.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/klog/v2"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// Wait follows the app h names until it reaches a final state (SUCCEEDED, FAILED or
// CANCELLED) and returns that status. It calls onChange, if not nil, with the first status
// and then with each status that differs from the one before. It resumes the watches that
// the server closes, and retries a lost connection a few times over half a minute. It
// returns an error if ctx ends, if the job cannot be read, or if the job is deleted.
func (c *Client) Wait(ctx context.Context, h Handle, onChange func(Status)) (Status, error) {
	if h.IsJobSet() {
		return c.waitJobSet(ctx, h, onChange)
	}
	ns := c.namespaceOf(h)
	// A first read fails at once, naming the job, on an unreachable cluster or an unknown job.
	job, err := c.Get(ctx, h)
	if err != nil {
		if c.isJobSet(ctx, h, err) {
			return c.waitJobSet(ctx, asJobSet(h), onChange)
		}
		return Status{}, err
	}
	last := StateOf(job)
	if onChange != nil {
		onChange(last)
	}
	for !last.State.Final() {
		err := c.follow(ctx, ns, c.jobTarget(job, &last, onChange))
		if err == nil {
			break
		}
		if !apierrors.IsGone(err) && !apierrors.IsResourceExpired(err) {
			return last, c.errorf(ns, "watch", err, "job %q", h.AppID)
		}
		// The watch fell too far behind: read the job afresh and watch from there.
		now, err := c.Get(ctx, h)
		if err != nil {
			return last, err
		}
		if now.UID != job.UID {
			return last, c.errorf(ns, "watch", errDeleted, "job %q", h.AppID)
		}
		job = now
		c.observe(job, &last, onChange)
	}
	return last, nil
}

// A watchTarget is the object that follow watches: its resource, name, UID and resource
// version, and what to do with each of its versions.
type watchTarget struct {
	client   *rest.RESTClient // the stream client of its group version
	resource string
	name     string
	uid      types.UID
	version  string // the resource version to watch from
	// observe records the state of a version of the object, and reports whether it is
	// final; it returns errDeleted for an object of another UID.
	observe func(obj runtime.Object) (bool, error)
}

// jobTarget returns the watch target of a Volcano Job, whose states observe records.
func (c *Client) jobTarget(job *vcbatch.Job, last *Status, onChange func(Status)) *watchTarget {
	return &watchTarget{
		client: c.stream.batch, resource: "jobs", name: job.Name, uid: job.UID, version: job.ResourceVersion,
		observe: func(obj runtime.Object) (bool, error) {
			now, ok := obj.(*vcbatch.Job)
			if !ok {
				return false, fmt.Errorf("got %T, want a Volcano Job", obj)
			}
			if now.UID != job.UID {
				return false, errDeleted
			}
			return c.observe(now, last, onChange), nil
		},
	}
}

// errDeleted reports that a job being waited for was deleted (and perhaps another created
// under the same name).
var errDeleted = errors.New("the job was deleted")

// follow watches the object of t from its resource version, recording each version with
// t.observe, until it reaches a final state (nil), the server no longer has the resource
// version (an error for which errors.IsGone or IsResourceExpired of k8s.io/apimachinery
// holds), or another error.
//
// client-go's RetryWatcher resumes the watches that the server closes, from the last
// resource version seen (bookmarks included). It would also retry a watch that cannot start
// for ever, each second: startWatch retries it with watchBackoff instead, and when that
// fails, ends the RetryWatcher with the error as its context's cause.
func (c *Client) follow(parent context.Context, ns string, t *watchTarget) error {
	ctx, stop := context.WithCancelCause(parent)
	defer stop(nil)
	sel := fields.OneTermEqualSelector("metadata.name", t.name).String()
	logger := klog.FromContext(ctx)
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.FieldSelector = sel
		w, err := c.startWatch(klog.NewContext(ctx, logger), t, ns, opts)
		if err != nil {
			stop(err)
		}
		return w, err
	}}
	// The RetryWatcher's logs only repeat, on stderr, the errors Wait returns: it gets a
	// logger that discards them (the zero Logger); the requests keep the caller's.
	rw, err := watchtools.NewRetryWatcherWithContext(klog.NewContext(ctx, klog.Logger{}), t.version, lw)
	if err != nil {
		return err
	}
	defer func() { rw.Stop(); <-rw.Done() }()
	_, err = watchtools.UntilWithoutRetry(ctx, rw, func(ev watch.Event) (bool, error) {
		switch ev.Type {
		case watch.Error:
			return false, apierrors.FromObject(ev.Object)
		case watch.Deleted:
			return false, errDeleted
		}
		return t.observe(ev.Object)
	})
	// If the caller's ctx ended, or startWatch gave up, UntilWithoutRetry says only that it
	// was interrupted.
	switch {
	case err == nil:
		return nil
	case parent.Err() != nil:
		return parent.Err()
	case ctx.Err() != nil:
		return context.Cause(ctx)
	}
	return err
}

// watchBackoff is how startWatch retries a watch that could not start: 6 tries, the
// last 31 seconds after the first.
var watchBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Steps: 6}

// startWatch starts a watch of the objects of t's resource in namespace ns that opts select. It retries, as
// watchBackoff says, while the connection is lost or the API server is busy or failing,
// and returns the error of the last try.
func (c *Client) startWatch(ctx context.Context, t *watchTarget, ns string, opts metav1.ListOptions) (watch.Interface, error) {
	var w watch.Interface
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, watchBackoff, func(ctx context.Context) (bool, error) {
		w, last = c.watch(ctx, t.client, t.resource, ns, opts)
		if last != nil && !retriable(last) {
			return false, last
		}
		return last == nil, nil
	})
	if err != nil && ctx.Err() == nil && wait.Interrupted(err) {
		err = last // the tries ran out
	}
	return w, err
}

// retriable reports whether a request that failed with err may succeed if made again: the
// connection was lost (err is no API status), or the API server was busy (429) or failing
// (5xx), as client-go's REST client judges the responses it retries. Other statuses, such as
// forbidden or gone, are its final answer.
func retriable(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	code := status.Status().Code
	return code == http.StatusTooManyRequests || code >= http.StatusInternalServerError
}

// observe records the status of job in last, calls onChange if it changed, and reports
// whether it is final.
func (c *Client) observe(job *vcbatch.Job, last *Status, onChange func(Status)) bool {
	return record(StateOf(job), last, onChange)
}

// record records st in last, calls onChange if it changed, and reports whether it is final.
func record(st Status, last *Status, onChange func(Status)) bool {
	if !st.equal(*last) {
		*last = st
		if onChange != nil {
			onChange(st)
		}
	}
	return st.State.Final()
}

// equal reports whether s and t show the same states.
func (s Status) equal(t Status) bool {
	if s.State != t.State || s.Phase != t.Phase || len(s.Roles) != len(t.Roles) {
		return false
	}
	for i := range s.Roles {
		a, b := s.Roles[i], t.Roles[i]
		if a.Name != b.Name || len(a.Replicas) != len(b.Replicas) {
			return false
		}
		for j := range a.Replicas {
			if a.Replicas[j].State != b.Replicas[j].State || a.Replicas[j].ID != b.Replicas[j].ID {
				return false
			}
		}
	}
	return true
}

// A Progress shows the states an app passes through. Its zero value is not usable; use
// [NewProgress].
type Progress struct {
	w        io.Writer
	live     bool
	app      AppState            // the app's state shown last
	replicas map[string]AppState // the replicas' states shown last, by "role/replica"
	lines    int                 // lines of the live block drawn last
}

// NewProgress returns a Progress that writes to w. If live, w is a terminal and the states
// are shown as a block redrawn in place; otherwise each change is one line: "HANDLE STATE"
// when the app's state changes and "ROLE/REPLICA STATE" when a replica's does.
func NewProgress(w io.Writer, live bool) *Progress {
	return &Progress{w: w, live: live}
}

// Update shows st, or in line mode the changes since the last status. It keeps no
// reference to st.
func (p *Progress) Update(st Status) {
	if p.live {
		p.draw(st)
		return
	}
	if st.State != p.app {
		fmt.Fprintf(p.w, "%s %s%s\n", st.Handle, st.State, phaseNote(st))
		p.app = st.State
	}
	if p.replicas == nil {
		p.replicas = map[string]AppState{}
	}
	for _, r := range st.Roles {
		for _, rep := range r.Replicas {
			key := fmt.Sprintf("%s/%d", r.Name, rep.ID)
			if s, ok := p.replicas[key]; !ok || s != rep.State {
				fmt.Fprintf(p.w, "%s %s\n", key, rep.State)
				p.replicas[key] = rep.State
			}
		}
	}
}

// draw redraws the live block.
func (p *Progress) draw(st Status) {
	var b strings.Builder
	for range p.lines {
		b.WriteString("\x1b[1A\x1b[2K") // up one line, clear it
	}
	block := FormatStatus(st)
	b.WriteString(block)
	p.lines = strings.Count(block, "\n")
	io.WriteString(p.w, b.String())
}

// phaseNote returns " (Phase: reason)" for messages, or "".
func phaseNote(st Status) string {
	switch {
	case st.Phase == "":
		return ""
	case st.Reason != "":
		return fmt.Sprintf(" (%s: %s)", st.Phase, st.Reason)
	}
	return fmt.Sprintf(" (%s)", st.Phase)
}

// FormatStatus formats st for people: the app's handle and state, then one line per role
// with the state of each replica.
func FormatStatus(st Status) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s%s\n", st.Handle, st.State, phaseNote(st))
	if st.Message != "" {
		fmt.Fprintf(&b, "  message: %s\n", st.Message)
	}
	width := 0
	for _, r := range st.Roles {
		width = max(width, len(r.Name))
	}
	for _, r := range st.Roles {
		fmt.Fprintf(&b, "  %-*s ", width, r.Name)
		for i, rep := range r.Replicas {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%d:%s", rep.ID, rep.State)
		}
		b.WriteString("\n")
	}
	return b.String()
}
