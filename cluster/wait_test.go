package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// sendEvent writes a watch event of type typ about obj, as the API server does.
func sendEvent(t *testing.T, w http.ResponseWriter, typ string, obj any) {
	data, err := json.Marshal(map[string]any{"type": typ, "object": obj})
	if err != nil {
		t.Error(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(data, '\n'))
	w.(http.Flusher).Flush()
}

// statusObject returns the Status of err as a watch event carries it.
func statusObject(err *apierrors.StatusError) metav1.Status {
	status := err.ErrStatus
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	return status
}

// jobAt returns job("app", phase) at resource version rv.
func jobAt(phase vcbatch.JobPhase, rv string) *vcbatch.Job {
	j := job("app", phase)
	j.ResourceVersion = rv
	return j
}

// fastBackoff makes startWatch retry at once, for the test.
func fastBackoff(t *testing.T, steps int) {
	saved := watchBackoff
	watchBackoff = wait.Backoff{Duration: time.Millisecond, Factor: 2, Steps: steps}
	t.Cleanup(func() { watchBackoff = saved })
}

// watchRVs returns the resource versions that the watches the server received started from.
func (api *fakeAPI) watchRVs() []string {
	api.mu.Lock()
	defer api.mu.Unlock()
	var rvs []string
	for _, r := range api.requests {
		if r.path == jobsPath && r.query.Get("watch") == "true" {
			rvs = append(rvs, r.query.Get("resourceVersion"))
		}
	}
	return rvs
}

// waitStates waits for the app "app" of namespace ml with c and returns the states it went
// through.
func waitStates(c *Client) ([]string, Status, error) {
	var states []string
	st, err := c.Wait(context.Background(), Handle{"ml", "app", ""}, func(s Status) { states = append(states, string(s.State)) })
	return states, st, err
}

// TestWaitResumes checks that Wait resumes a watch that the server closes, from the last
// resource version it saw, and reports only the statuses that differ.
func TestWaitResumes(t *testing.T) {
	watches := 0
	c, api := connectFake(t, map[string]http.HandlerFunc{
		"GET " + jobsPath + "/app": func(w http.ResponseWriter, r *http.Request) {
			reply(t, w, http.StatusOK, jobAt(vcbatch.Pending, "5"))
		},
		"GET " + jobsPath: func(w http.ResponseWriter, r *http.Request) {
			if watches++; watches == 1 {
				sendEvent(t, w, "MODIFIED", jobAt(vcbatch.Pending, "6")) // no change
				sendEvent(t, w, "MODIFIED", jobAt(vcbatch.Running, "7"))
				return // the server closes the watch
			}
			sendEvent(t, w, "MODIFIED", jobAt(vcbatch.Completed, "8"))
		},
	})
	states, st, err := waitStates(c)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != Succeeded {
		t.Errorf("got state %s, want SUCCEEDED", st.State)
	}
	if diff := cmp.Diff([]string{"PENDING", "RUNNING", "SUCCEEDED"}, states); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"5", "7"}, api.watchRVs()); diff != "" {
		t.Errorf("watches from resource versions (-want +got):\n%s", diff)
	}
}

// TestWaitExpired checks that Wait reads the job afresh, and watches from there, when a
// watch cannot start because the server no longer has the resource version.
func TestWaitExpired(t *testing.T) {
	fastBackoff(t, 4)
	gets, watches := 0, 0
	c, api := connectFake(t, map[string]http.HandlerFunc{
		"GET " + jobsPath + "/app": func(w http.ResponseWriter, r *http.Request) {
			if gets++; gets == 1 {
				reply(t, w, http.StatusOK, jobAt(vcbatch.Pending, "5"))
				return
			}
			reply(t, w, http.StatusOK, jobAt(vcbatch.Running, "8"))
		},
		"GET " + jobsPath: func(w http.ResponseWriter, r *http.Request) {
			if watches++; watches == 1 {
				replyStatus(t, w, apierrors.NewResourceExpired("too old resource version: 5"))
				return
			}
			sendEvent(t, w, "MODIFIED", jobAt(vcbatch.Completed, "9"))
		},
	})
	states, _, err := waitStates(c)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"PENDING", "RUNNING", "SUCCEEDED"}, states); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"5", "8"}, api.watchRVs()); diff != "" {
		t.Errorf("watches from resource versions (-want +got):\n%s", diff)
	}
}

// TestWaitRetries checks that Wait retries a watch that cannot start while the API server
// is unavailable, and that it gives up after watchBackoff's tries with the last error,
// without logging it.
func TestWaitRetries(t *testing.T) {
	fastBackoff(t, 4)
	var logged bytes.Buffer
	klog.LogToStderr(false)
	klog.SetOutput(&logged)
	t.Cleanup(func() {
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	})

	for _, test := range []struct {
		failures int // of the watches, before one starts
		want     string
		watches  int
	}{
		{failures: 3, watches: 4},
		{failures: 4, want: `watch job "app": busy`, watches: 4},
	} {
		watches := 0
		c, api := connectFake(t, map[string]http.HandlerFunc{
			"GET " + jobsPath + "/app": func(w http.ResponseWriter, r *http.Request) {
				reply(t, w, http.StatusOK, jobAt(vcbatch.Running, "5"))
			},
			"GET " + jobsPath: func(w http.ResponseWriter, r *http.Request) {
				if watches++; watches <= test.failures {
					replyStatus(t, w, apierrors.NewServiceUnavailable("busy"))
					return
				}
				sendEvent(t, w, "MODIFIED", jobAt(vcbatch.Completed, "6"))
			},
		})
		_, st, err := waitStates(c)
		if test.want == "" {
			if err != nil || st.State != Succeeded {
				t.Errorf("%d failures: got %s, %v; want SUCCEEDED", test.failures, st.State, err)
			}
		} else {
			if err == nil || !strings.HasSuffix(err.Error(), test.want) || !apierrors.IsServiceUnavailable(err) {
				t.Errorf("%d failures: got error %v, want one ending %q", test.failures, err, test.want)
			}
			if st.State != Running {
				t.Errorf("%d failures: got last state %s, want RUNNING", test.failures, st.State)
			}
		}
		if got := len(api.watchRVs()); got != test.watches {
			t.Errorf("%d failures: got %d watches, want %d", test.failures, got, test.watches)
		}
	}
	klog.Flush()
	if logged.Len() > 0 {
		t.Errorf("Wait logged:\n%s", logged.String())
	}
}

// TestWaitRefused checks that Wait does not retry a watch that the API server refuses.
func TestWaitRefused(t *testing.T) {
	fastBackoff(t, 4)
	c, api := connectFake(t, map[string]http.HandlerFunc{
		"GET " + jobsPath + "/app": func(w http.ResponseWriter, r *http.Request) {
			reply(t, w, http.StatusOK, jobAt(vcbatch.Running, "5"))
		},
		"GET " + jobsPath: func(w http.ResponseWriter, r *http.Request) {
			replyStatus(t, w, apierrors.NewForbidden(vcbatch.Resource("jobs"), "", errors.New("no watch for you")))
		},
	})
	_, _, err := waitStates(c)
	var e *Error
	if !errors.As(err, &e) || e.Op != "watch" || !apierrors.IsForbidden(err) {
		t.Fatalf("got error %v (%T), want an *Error of a forbidden watch", err, err)
	}
	if got := len(api.watchRVs()); got != 1 {
		t.Errorf("got %d watches, want 1", got)
	}
}

// TestWaitDeleted checks that Wait fails when the job is deleted, or deleted and made again
// under the same name, however it learns of it.
func TestWaitDeleted(t *testing.T) {
	other := jobAt(vcbatch.Running, "9")
	other.UID = "uid-2"
	gone := statusObject(apierrors.NewResourceExpired("too old resource version: 5"))
	for _, test := range []struct {
		name  string
		event string
		obj   any
		again *vcbatch.Job // the job a read after the expired watch finds, or nil for none
		want  string
	}{
		{"deleted", "DELETED", jobAt(vcbatch.Running, "6"), nil, `watch job "app": the job was deleted`},
		{"made again", "ADDED", other, nil, `watch job "app": the job was deleted`},
		{"made again, watch expired", "ERROR", gone, other, `watch job "app": the job was deleted`},
		{"deleted, watch expired", "ERROR", gone, nil, `get job "app": jobs.batch.volcano.sh "app" not found`},
	} {
		gets := 0
		c, _ := connectFake(t, map[string]http.HandlerFunc{
			"GET " + jobsPath + "/app": func(w http.ResponseWriter, r *http.Request) {
				switch gets++; {
				case gets == 1:
					reply(t, w, http.StatusOK, jobAt(vcbatch.Running, "5"))
				case test.again != nil:
					reply(t, w, http.StatusOK, test.again)
				default:
					replyStatus(t, w, apierrors.NewNotFound(vcbatch.Resource("jobs"), "app"))
				}
			},
			"GET " + jobsPath: func(w http.ResponseWriter, r *http.Request) {
				sendEvent(t, w, test.event, test.obj)
			},
		})
		states, _, err := waitStates(c)
		if err == nil || !strings.HasSuffix(err.Error(), test.want) {
			t.Errorf("%s: got error %v, want one ending %q", test.name, err, test.want)
		}
		if diff := cmp.Diff([]string{"RUNNING"}, states); diff != "" {
			t.Errorf("%s: states (-want +got):\n%s", test.name, diff)
		}
	}
}

// TestWaitContext checks that Wait ends with ctx, while it watches and while it waits to
// retry a watch, with ctx.Err().
func TestWaitContext(t *testing.T) {
	for _, test := range []struct {
		name  string
		watch http.HandlerFunc
	}{
		{"watching", func(w http.ResponseWriter, r *http.Request) {
			sendEvent(t, w, "MODIFIED", jobAt(vcbatch.Running, "6"))
			<-r.Context().Done()
		}},
		{"retrying", func(w http.ResponseWriter, r *http.Request) {
			replyStatus(t, w, apierrors.NewServiceUnavailable("busy"))
		}},
	} {
		// As signal.NotifyContext does, with a cause that Wait does not report.
		ctx, cancel := context.WithCancelCause(context.Background())
		c, api := connectFake(t, map[string]http.HandlerFunc{
			"GET " + jobsPath + "/app": func(w http.ResponseWriter, r *http.Request) {
				reply(t, w, http.StatusOK, jobAt(vcbatch.Pending, "5"))
			},
			"GET " + jobsPath: test.watch,
		})
		start := time.Now()
		_, err := c.Wait(ctx, Handle{"ml", "app", ""}, func(Status) {
			time.AfterFunc(50*time.Millisecond, func() { cancel(errors.New("interrupt signal received")) })
		})
		cancel(nil)
		if !errors.Is(err, context.Canceled) || !strings.HasSuffix(err.Error(), `watch job "app": context canceled`) {
			t.Errorf("%s: got error %v, want context canceled", test.name, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: Wait took %v after ctx ended", test.name, d)
		}
		if len(api.watchRVs()) == 0 {
			t.Errorf("%s: no watch", test.name)
		}
	}
}

func TestRetriable(t *testing.T) {
	gr := schema.GroupResource{Group: "batch.volcano.sh", Resource: "jobs"}
	for _, test := range []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{apierrors.NewServiceUnavailable("busy"), true},
		{apierrors.NewInternalError(errors.New("oops")), true},
		{apierrors.NewTooManyRequests("slow down", 1), true},
		{apierrors.NewTimeoutError("slow", 1), true},
		{apierrors.NewNotFound(gr, "j"), false},
		{apierrors.NewForbidden(gr, "j", errors.New("no")), false},
		{apierrors.NewResourceExpired("too old"), false},
	} {
		if got := retriable(test.err); got != test.want {
			t.Errorf("retriable(%v) = %t, want %t", test.err, got, test.want)
		}
	}
}
