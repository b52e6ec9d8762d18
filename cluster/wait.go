package cluster

// This file defines Wait, which follows an app until it ends, and Progress, which shows the
// states it passes through.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// Wait follows the app h names until it reaches a final state (SUCCEEDED, FAILED or
// CANCELLED) and returns that status. It calls onChange, if not nil, with the first status
// and then with each status that differs from the one before. It resumes the watches that
// the server closes, and retries a lost connection a few times over half a minute. It
// returns an error if ctx ends, if the job cannot be read, or if the job is deleted.
func (c *Client) Wait(ctx context.Context, h Handle, onChange func(Status)) (Status, error) {
	ns := c.namespaceOf(h)
	// A first read fails at once, naming the job, on an unreachable cluster or an unknown job.
	job, err := c.Get(ctx, h)
	if err != nil {
		return Status{}, err
	}
	uid := job.UID
	last := StateOf(job)
	if onChange != nil {
		onChange(last)
	}
	if last.State.Final() {
		return last, nil
	}

	sel := fields.OneTermEqualSelector("metadata.name", h.AppID).String()
	rv := job.ResourceVersion
	retries := 0
	for {
		w, err := c.watchJobs(ctx, ns, metav1.ListOptions{
			FieldSelector:       sel,
			ResourceVersion:     rv,
			AllowWatchBookmarks: true,
		})
		if err != nil {
			if retries < len(watchBackoff) && transient(err) {
				select {
				case <-time.After(watchBackoff[retries]):
					retries++
					continue
				case <-ctx.Done():
				}
			}
			return last, c.errorf(ns, "watch", err, "job %q", h.AppID)
		}
		retries = 0
		done, gone, err := c.follow(ctx, w, uid, &rv, &last, onChange)
		w.Stop()
		switch {
		case err != nil:
			return last, c.errorf(ns, "watch", err, "job %q", h.AppID)
		case done:
			return last, nil
		case gone:
			// The watch fell too far behind: read the job afresh and watch from there.
			job, err := c.Get(ctx, h)
			if err != nil {
				return last, err
			}
			if job.UID != uid {
				return last, c.errorf(ns, "watch", errDeleted, "job %q", h.AppID)
			}
			rv = job.ResourceVersion
			if done := c.observe(job, &last, onChange); done {
				return last, nil
			}
		}
		// Otherwise the server closed the watch, as it does from time to time: resume it.
	}
}

// watchBackoff is how long Wait waits before each retry of a watch it could not start.
var watchBackoff = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}

// transient reports whether err may go away if the request is repeated: a lost connection,
// or the API server saying it is busy.
func transient(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err)
}

// errDeleted reports that a job being waited for was deleted (and perhaps another created
// under the same name).
var errDeleted = errors.New("the job was deleted")

// follow reads the events of w until the job reaches a final state (done), the watch ends
// (all false), the server says the resource version is gone (gone), or an error. It keeps rv
// at the last resource version seen.
func (c *Client) follow(ctx context.Context, w watch.Interface, uid types.UID, rv *string, last *Status, onChange func(Status)) (done, gone bool, err error) {
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return false, false, ctx.Err()
		case ev, ok = <-w.ResultChan():
		}
		if !ok {
			return false, false, nil
		}
		switch ev.Type {
		case watch.Error:
			err := apierrors.FromObject(ev.Object)
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				return false, true, nil
			}
			return false, false, err
		case watch.Deleted:
			return false, false, errDeleted
		case watch.Bookmark, watch.Added, watch.Modified:
			job, ok := ev.Object.(*vcbatch.Job)
			if !ok {
				return false, false, fmt.Errorf("watch: got %T, want a Volcano Job", ev.Object)
			}
			*rv = job.ResourceVersion
			if ev.Type == watch.Bookmark {
				continue
			}
			if job.UID != uid {
				return false, false, errDeleted
			}
			if c.observe(job, last, onChange) {
				return true, false, nil
			}
		}
	}
}

// observe records the status of job in last, calls onChange if it changed, and reports
// whether it is final.
func (c *Client) observe(job *vcbatch.Job, last *Status, onChange func(Status)) bool {
	st := StateOf(job)
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
