package cluster

// This file defines Logs, which streams the logs of an app's pods, and the formatting of
// their lines.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/starpod/starpod/internal/spell"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// LogOptions are the options of [Client.Logs]. The zero value prints every line the pods
// have logged of each pod's default container, without colour, and returns.
type LogOptions struct {
	Follow        bool           // stream new lines until the containers end or ctx is done
	Since         time.Duration  // only lines newer than this; 0 for all
	Tail          *int64         // only the last *Tail lines of each container; nil for all
	Regex         *regexp.Regexp // only lines that match; nil for all
	Container     string         // this container of each pod, instead of the default one
	AllContainers bool           // every container of each pod, init containers first
	Color         bool           // colour the prefixes with ANSI escapes, for a terminal
	Notes         io.Writer      // where to say which pods have no logs yet; nil for nowhere
}

// Logs writes the log lines of the pods of the app that t names to w, each line prefixed
// by the pod's role and replica id ("trainer/0") and, when several containers of a pod are
// shown, the container ("trainer/0/sidecar"). Lines of one container keep their order; the
// lines of different containers interleave as they arrive. It reports the errors of every
// container that could not be read, after writing what the others gave.
func (c *Client) Logs(ctx context.Context, t LogTarget, opts LogOptions, w io.Writer) error {
	src, err := c.logSource(ctx, t.Handle)
	if err != nil {
		return err
	}
	ns := src.namespace
	if err := checkTarget(src.replicas, t); err != nil {
		return c.errorf(ns, "logs", err, "%s", src.object)
	}
	pods := new(corev1.PodList)
	if err := c.pods(ns).list(ctx, metav1.ListOptions{LabelSelector: src.selector}, pods); err != nil {
		return c.errorf(ns, "list", err, "pods of %s (%s)", src.object, src.selector)
	}
	streams, err := logStreams(src.refOf, pods.Items, t, opts)
	if err != nil {
		return c.errorf(ns, "logs", err, "%s", src.object)
	}
	if len(streams) == 0 {
		st := src.status()
		return c.errorf(ns, "logs", fmt.Errorf("no pods yet (app is %s%s)", st.State, phaseNote(st)), "%s", t)
	}

	p := newLinePrinter(w, opts.Color)
	for _, s := range streams {
		p.add(s.prefix)
		// The API server answers an empty log for a pod on no node, and a user would wonder.
		if s.node == "" && opts.Notes != nil {
			fmt.Fprintf(opts.Notes, "%s: pod %q is not on a node yet (%s): no logs\n", s.prefix, s.pod, s.phase)
		}
	}
	podOpts := corev1.PodLogOptions{Follow: opts.Follow}
	if opts.Since > 0 {
		secs := int64(math.Ceil(opts.Since.Seconds()))
		podOpts.SinceSeconds = &secs
	}
	if opts.Tail != nil {
		n := *opts.Tail
		podOpts.TailLines = &n
	}
	errs := make([]error, len(streams))
	var wg sync.WaitGroup
	for i, s := range streams {
		wg.Go(func() {
			o := podOpts
			o.Container = s.container
			rc, err := c.podLogs(ctx, ns, s.pod, &o)
			if err == nil {
				err = p.copy(s.prefix, rc, opts.Regex)
				rc.Close()
			}
			if err != nil {
				errs[i] = c.errorf(ns, "logs", err, "pod %q container %q", s.pod, s.container)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// A logSource is where the pods of an app are found, and which replica each is.
type logSource struct {
	namespace string
	object    string       // the Volcano Job or JobSet, for errors: `job "x"`
	replicas  []replicaRef // every replica of the app
	selector  string       // the label selector of its pods
	refOf     func(*corev1.Pod) (replicaRef, bool)
	status    func() Status // the app's status, for errors
}

// logSource returns the log source of the app h names: its Volcano Job's, or its JobSet's.
func (c *Client) logSource(ctx context.Context, h Handle) (*logSource, error) {
	if !h.IsJobSet() {
		job, err := c.Get(ctx, h)
		if err == nil {
			return &logSource{
				namespace: job.Namespace,
				object:    fmt.Sprintf("job %q", job.Name),
				replicas:  jobReplicas(job),
				selector:  labels.Set{vcbatch.JobNameKey: job.Name}.String(),
				refOf:     jobPodRef(job),
				status:    func() Status { return StateOf(job) },
			}, nil
		}
		if !c.isJobSet(ctx, h, err) {
			return nil, err
		}
		h = asJobSet(h)
	}
	js, err := c.GetJobSet(ctx, h)
	if err != nil {
		return nil, err
	}
	return &logSource{
		namespace: js.Namespace,
		object:    fmt.Sprintf("jobset %q", js.Name),
		replicas:  jobSetReplicas(js),
		selector:  labels.Set{jobset.JobSetNameKey: js.Name}.String(),
		refOf:     jobSetPodRef(js),
		status:    func() Status { return StateOfJobSet(js, nil, nil) },
	}, nil
}

// jobReplicas returns the replicas of a Volcano Job: one per task.
func jobReplicas(job *vcbatch.Job) []replicaRef {
	refs := make([]replicaRef, len(job.Spec.Tasks))
	for i, task := range job.Spec.Tasks {
		refs[i] = taskReplica(task)
	}
	return refs
}

// jobPodRef returns the replica a pod of a Volcano Job is: its task's.
func jobPodRef(job *vcbatch.Job) func(*corev1.Pod) (replicaRef, bool) {
	tasks := map[string]replicaRef{}
	for _, task := range job.Spec.Tasks {
		tasks[task.Name] = taskReplica(task)
	}
	return func(pod *corev1.Pod) (replicaRef, bool) {
		ref, ok := tasks[pod.Labels[vcbatch.TaskSpecKey]]
		return ref, ok
	}
}

// checkTarget checks that the role and replica of t are among the replicas refs.
func checkTarget(refs []replicaRef, t LogTarget) error {
	if t.Role == "" {
		return nil
	}
	var roles []string
	seen := map[string]bool{}
	var replicas []int
	for _, ref := range refs {
		if !seen[ref.role] {
			seen[ref.role] = true
			roles = append(roles, ref.role)
		}
		if ref.role == t.Role {
			replicas = append(replicas, ref.replica)
		}
	}
	if !seen[t.Role] {
		msg := fmt.Sprintf("got role %q, want one of %s", t.Role, strings.Join(roles, ", "))
		if near := spell.Nearest(t.Role, roles); near != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", near)
		}
		return errors.New(msg)
	}
	if t.Replica >= 0 && !containsInt(replicas, t.Replica) {
		sort.Ints(replicas)
		return fmt.Errorf("got replica %d of role %q, want one of %s", t.Replica, t.Role, joinInts(replicas))
	}
	return nil
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

// A logStream is one container of one pod whose logs to print.
type logStream struct {
	pod, container, prefix string
	node                   string // the pod's node, "" if it is not scheduled
	phase                  corev1.PodPhase
	ref                    replicaRef
}

// logStreams returns the containers of the pods whose logs t and opts select, in role,
// replica and container order; refOf says which replica a pod is, if any.
func logStreams(refOf func(*corev1.Pod) (replicaRef, bool), pods []corev1.Pod, t LogTarget, opts LogOptions) ([]logStream, error) {
	var out []logStream
	for _, pod := range pods {
		ref, ok := refOf(&pod)
		if !ok {
			continue // not a pod of one of the app's replicas
		}
		if t.Role != "" && ref.role != t.Role || t.Replica >= 0 && ref.replica != t.Replica {
			continue
		}
		var names []string
		switch {
		case opts.AllContainers:
			for _, c := range pod.Spec.InitContainers {
				names = append(names, c.Name)
			}
			for _, c := range pod.Spec.Containers {
				names = append(names, c.Name)
			}
		case opts.Container != "":
			if !hasContainer(&pod, opts.Container) {
				return nil, fmt.Errorf("pod %q: got container %q, want one of %s", pod.Name, opts.Container, strings.Join(containerNames(&pod), ", "))
			}
			names = []string{opts.Container}
		default:
			names = []string{defaultContainer(&pod)}
		}
		for _, name := range names {
			prefix := fmt.Sprintf("%s/%d", ref.role, ref.replica)
			if len(names) > 1 {
				prefix += "/" + name
			}
			out = append(out, logStream{pod: pod.Name, container: name, prefix: prefix,
				node: pod.Spec.NodeName, phase: pod.Status.Phase, ref: ref})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].ref, out[j].ref
		if a.roleIndex != b.roleIndex {
			return a.roleIndex < b.roleIndex
		}
		if a.role != b.role {
			return a.role < b.role
		}
		return a.replica < b.replica
	})
	return out, nil
}

// defaultContainer returns the container kubectl would choose: the one the
// kubectl.kubernetes.io/default-container annotation names, else the first.
func defaultContainer(pod *corev1.Pod) string {
	if name := pod.Annotations["kubectl.kubernetes.io/default-container"]; name != "" && hasContainer(pod, name) {
		return name
	}
	if len(pod.Spec.Containers) > 0 {
		return pod.Spec.Containers[0].Name
	}
	return ""
}

func hasContainer(pod *corev1.Pod, name string) bool {
	for _, n := range containerNames(pod) {
		if n == name {
			return true
		}
	}
	return false
}

func containerNames(pod *corev1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

// A linePrinter writes whole lines from several streams to one writer, each with its
// stream's prefix, padded to the longest prefix and coloured if asked.
type linePrinter struct {
	mu     sync.Mutex
	w      io.Writer
	color  bool
	width  int
	colors map[string]int
}

func newLinePrinter(w io.Writer, color bool) *linePrinter {
	return &linePrinter{w: w, color: color, colors: map[string]int{}}
}

// add registers a prefix before any line is written.
func (p *linePrinter) add(prefix string) {
	p.width = max(p.width, len(prefix))
	if _, ok := p.colors[prefix]; !ok {
		p.colors[prefix] = len(p.colors)
	}
}

// copy writes each line of r that matches re (all, if re is nil) with prefix.
func (p *linePrinter) copy(prefix string, r io.Reader, re *regexp.Regexp) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			line = strings.TrimSuffix(line, "\n")
			if re == nil || re.MatchString(line) {
				p.mu.Lock()
				_, werr := io.WriteString(p.w, FormatLogLine(prefix, p.width, p.colorOf(prefix), line))
				p.mu.Unlock()
				if werr != nil {
					return werr
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// colorOf returns the palette index of prefix, or -1 for no colour.
func (p *linePrinter) colorOf(prefix string) int {
	if !p.color {
		return -1
	}
	return p.colors[prefix]
}

// palette holds the ANSI foreground colours of prefixes: green, cyan, yellow, magenta,
// blue, red, then their bright forms.
var palette = []string{"32", "36", "33", "35", "34", "31", "92", "96", "93", "95", "94", "91"}

// FormatLogLine formats one log line with its prefix ("trainer/0" or
// "trainer/0/sidecar"), padded to width, and a newline. A color of 0 or more colours the
// prefix with ANSI escapes, cycling through a palette of 12; -1 leaves it plain. Control
// characters in the line other than tab are escaped, so a line cannot move the cursor or
// change the terminal.
func FormatLogLine(prefix string, width, color int, line string) string {
	var b strings.Builder
	pad := max(width-len(prefix), 0)
	if color >= 0 {
		fmt.Fprintf(&b, "\x1b[%sm%s\x1b[0m", palette[color%len(palette)], prefix)
	} else {
		b.WriteString(prefix)
	}
	b.WriteString(strings.Repeat(" ", pad+1))
	line = strings.TrimSuffix(line, "\r")
	for _, r := range line {
		switch {
		case r == '\t' || r >= 0x20 && r != 0x7f && !(r >= 0x80 && r < 0xa0):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	b.WriteByte('\n')
	return b.String()
}
