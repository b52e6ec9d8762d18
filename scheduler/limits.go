package scheduler

// This file defines the limits of an app spec and of the job built from it, which keep a
// hostile spec from crashing, hanging or swelling the process that reads it, and their checks.

import (
	"encoding/json"
	"fmt"
	"github.com/starpod/starpod/internal/yamlfile"
	"strconv"
	"strings"

	"github.com/starpod/starpod/internal/bound"
	"k8s.io/apimachinery/pkg/util/validation/field"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// The limits of an app spec and of its job. They are not configurable: each is far above
// what a job the API server accepts can need.
const (
	// MaxSpecFile bounds the size of an app spec file. The spec is kept in the job as JSON
	// of at most 128 KiB (AnnotationAppSpec): twice that leaves room for the comments and
	// the layout of any spec a job can keep. LoadApp reads no more, and ParseApp refuses
	// larger data. On the worst spec of this size, starpod run peaks at about 75 MiB.
	MaxSpecFile = 256 << 10

	// MaxJobBytes bounds the JSON of the job, after macro expansion and overlays: the
	// largest request body the API server accepts (3 MiB). Build computes the size the
	// spec gives the job before it builds any replica, and adds up the real size of the
	// tasks as overlays change them. (etcd's default limit of a request, 1.5 MiB, may
	// still refuse a smaller job.)
	MaxJobBytes = 3 << 20

	// MaxTasks bounds the tasks of a job, the replicas of all its roles together. The
	// smallest task starpod builds is about 630 bytes of JSON, so that more than 5,000
	// never fit in MaxJobBytes.
	MaxTasks = 5000

	// AliasFactor, MinAliasValues and MaxAliasValues bound what YAML aliases add to a spec:
	// the values that an alias stands for count each time the alias is used, and together
	// they may be at most AliasFactor times the values written in the spec, but never
	// fewer than MinAliasValues nor more than MaxAliasValues (see yamlfile.AliasFactor).
	// 100,000 values are more than the 128 KiB of JSON that a job keeps of its spec can
	// hold, so that no spec within the ceiling's reach is refused for it alone.
	AliasFactor    = yamlfile.AliasFactor
	MinAliasValues = yamlfile.MinAliasValues
	MaxAliasValues = yamlfile.MaxAliasValues
)

// A JobSizeError reports a job whose JSON, with the overlays applied, is larger than the API
// server accepts. A job too large already from its spec is reported as a *SpecError, with
// the field that makes it so.
type JobSizeError struct {
	File  string // the spec file
	Limit int64  // MaxJobBytes
}

func (e *JobSizeError) Error() string {
	return fmt.Sprintf("%s: with the overlays applied, the job is larger than the limit of %s the API server accepts",
		e.File, bound.FormatSize(e.Limit))
}

// validateTasks checks that the roles have at most MaxTasks replicas together.
func (app *App) validateTasks() *field.Error {
	total := 0
	for i := range app.Roles {
		// A role with too many replicas, or too few, is an error of its own.
		if n := app.Roles[i].Replicas(); n > 0 && n <= maxReplicas {
			total += n
		}
	}
	if total <= MaxTasks {
		return nil
	}
	return yamlfile.LimitError(field.ErrorTypeTooMany, field.NewPath("roles"), fmt.Sprintf(
		"got %d replicas in all, want at most %d: each replica is a task of one Volcano Job, which must fit in the %s the API server accepts",
		total, MaxTasks, bound.FormatSize(MaxJobBytes)))
}

// jsonSize returns the size of the JSON of v.
func jsonSize(v any) (int64, error) {
	data, err := json.Marshal(v)
	return int64(len(data)), err
}

// tasksSize returns the size of the JSON of a job whose tasks are of the sizes given, in
// all, from the size of the job without them: `,"tasks":[` + the tasks + commas + `]`.
func tasksSize(head, tasks int64, n int) int64 {
	if n == 0 {
		return head
	}
	return head + int64(len(`,"tasks":[]`)) + tasks + int64(n-1)
}

// estimate checks, before any replica is built, that the job of the app, as the spec makes
// it before overlays, is within MaxJobBytes. head is the size of the job's JSON without its
// tasks. It returns the problem as a field error of the roles, of the role that makes the
// job so large, or of the field of it that does.
func (b *builder) estimate(head int64) (*field.Error, error) {
	total, tasks, worst, largest, err := b.jobSize(head, MaxJobBytes)
	if err != nil || total <= MaxJobBytes {
		return nil, err
	}
	p := field.NewPath("roles")
	detail := fmt.Sprintf("after macro expansion the job is larger than the limit of %s the API server accepts",
		bound.FormatSize(MaxJobBytes))
	if 2*largest <= total-head {
		return yamlfile.LimitError(field.ErrorTypeTooLong, p, fmt.Sprintf("%s: %d replicas in all", detail, tasks)), nil
	}
	r := &b.app.Roles[worst]
	n := r.Replicas()
	p = p.Index(worst)
	per := largest / int64(n)
	if f, size := b.largestField(r); 2*size > per {
		p = p.Child(f[0], f[1:]...)
	} else if n > 1 {
		p = p.Child("num_replicas")
	}
	if n > 1 {
		detail += fmt.Sprintf(": %d replicas of about %s", n, formatApprox(per))
	} else {
		detail += fmt.Sprintf(": one replica of about %s", formatApprox(per))
	}
	return yamlfile.LimitError(field.ErrorTypeTooLong, p, detail), nil
}

// jobSize returns the size of the JSON of the job of the app before overlays, whose JSON
// without tasks is head bytes, without building more than three pods of each role: the size
// of a task depends on its replica only through the digits of the replica's number, and
// whether it is the first replica of the job. It stops at the first role that brings the
// total above limit. It also returns the tasks counted, and which role adds the most and
// how much.
func (b *builder) jobSize(head, limit int64) (total int64, tasks, worst int, largest int64, err error) {
	var sum int64
	worst = -1
	for ri := range b.app.Roles {
		r := &b.app.Roles[ri]
		n := r.Replicas()
		first, err := b.taskSize(ri, 0, false)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		size := int64(n) * first
		if n > 10 {
			// Each replica from 10 on has one more digit in every place that shows its
			// number, from 100 on two.
			ten, err := b.taskSize(ri, 10, false)
			if err != nil {
				return 0, 0, 0, 0, err
			}
			extra := int64(min(n, 100)-10) + 2*int64(max(n-100, 0))
			size += extra * (ten - first)
		}
		if ri == 0 {
			rank0, err := b.taskSize(ri, 0, true)
			if err != nil {
				return 0, 0, 0, 0, err
			}
			size += rank0 - first
		}
		sum += size
		tasks += n
		if size > largest {
			largest, worst = size, ri
		}
		if tasksSize(head, sum, tasks) > limit {
			break
		}
	}
	return tasksSize(head, sum, tasks), tasks, worst, largest, nil
}

// taskSize returns the size of the JSON of the task of replica id of role ri, before
// overlays, as the first replica of the job (rank0) or not.
func (b *builder) taskSize(ri, id int, rank0 bool) (int64, error) {
	rep := &replica{role: ri, id: id}
	b.podAs(rep, rank0)
	return jsonSize(b.newTask(rep))
}

// largestField returns the field of the role whose values, with the macros expanded for
// its last replica, are the largest, and their size.
func (b *builder) largestField(r *Role) ([]string, int64) {
	m := b.macros(r, r.Replicas()-1, false)
	var best []string
	var most int64
	consider := func(size int64, path ...string) {
		if size > most {
			best, most = path, size
		}
	}
	var size int64
	for _, a := range r.Args {
		size += expandedLen(m, a)
	}
	consider(size, "args")
	size = 0
	for _, e := range r.Env {
		size += int64(len(e.Name)) + expandedLen(m, e.Value)
	}
	consider(size, "env")
	size = 0
	for k, v := range r.Metadata.Labels {
		size += int64(len(k)) + expandedLen(m, v)
	}
	consider(size, "metadata", "labels")
	size = 0
	for k, v := range r.Metadata.Annotations {
		size += int64(len(k)) + expandedLen(m, v)
	}
	consider(size, "metadata", "annotations")
	consider(int64(len(r.Image)), "image")
	consider(int64(len(r.Entrypoint)), "entrypoint")
	size = 0
	for _, mnt := range r.Mounts {
		size += int64(len(mnt.Src) + len(mnt.Dst))
	}
	consider(size, "mounts")
	return best, most
}

// expandedLen returns the length of s with the macros substituted, as m.expand(s) has,
// without making it. s has been checked by checkMacros.
func expandedLen(m macroValues, s string) int64 {
	n := int64(0)
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		if i > 0 && s[i-1] == '$' {
			n += int64(i - 1 + 2)
			s = s[i+2:]
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			break
		}
		n += int64(i + len(m[s[i+2:i+end]]))
		s = s[i+end+1:]
	}
	return n + int64(len(s))
}

// formatApprox formats a size in bytes rounded to KiB or MiB.
func formatApprox(n int64) string {
	switch {
	case n >= 10<<20:
		return strconv.FormatInt((n+1<<19)>>20, 10) + "Mi"
	case n >= 10<<10:
		return strconv.FormatInt((n+1<<9)>>10, 10) + "Ki"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// headSize returns the size of the JSON of the job without its tasks.
func headSize(job *vcbatch.Job) (int64, error) {
	head := *job
	head.Spec.Tasks = nil
	return jsonSize(&head)
}
