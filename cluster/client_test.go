package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcbus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/starpod/starpod/scheduler"
)

// A request is a request that the fake API server received.
type request struct {
	method, path string
	query        url.Values
	header       http.Header
	body         []byte
}

// A fakeAPI is an API server on the loopback that answers with the handlers of its routes
// and records the requests it receives.
type fakeAPI struct {
	mu       sync.Mutex
	requests []request
}

// connectFake starts a fake API server with routes, patterns of http.ServeMux and their
// handlers, and returns a client of it, whose namespace is "ml".
func connectFake(t *testing.T, routes map[string]http.HandlerFunc) (*Client, *fakeAPI) {
	t.Helper()
	api := &fakeAPI{}
	mux := http.NewServeMux()
	for pattern, h := range routes {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				t.Errorf("%s %s: reading the body: %v", r.Method, r.URL.Path, err)
			}
			api.mu.Lock()
			api.requests = append(api.requests, request{r.Method, r.URL.Path, r.URL.Query(), r.Header, body})
			api.mu.Unlock()
			h(w, r)
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected request %s %s", r.Method, r.URL)
		http.NotFound(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	file := filepath.Join(t.TempDir(), "config")
	config := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: fake, context: {cluster: fake, user: u, namespace: ml}}]
current-context: fake
`, srv.URL)
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Connect(Options{Kubeconfig: file, UserAgent: "starpod-test"})
	if err != nil {
		t.Fatal(err)
	}
	return c, api
}

// only returns the one request the server received.
func (api *fakeAPI) only(t *testing.T) request {
	t.Helper()
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.requests) != 1 {
		t.Fatalf("got %d requests, want 1", len(api.requests))
	}
	return api.requests[0]
}

// calls returns the method and path of each request the server received, in order.
func (api *fakeAPI) calls() []string {
	api.mu.Lock()
	defer api.mu.Unlock()
	var calls []string
	for _, r := range api.requests {
		calls = append(calls, r.method+" "+r.path)
	}
	return calls
}

// reply answers with status code and v as JSON.
func reply(t *testing.T, w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		t.Error(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(data)
}

// replyStatus answers with the Status of err, as the API server does.
func replyStatus(t *testing.T, w http.ResponseWriter, err *apierrors.StatusError) {
	status := err.ErrStatus
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	reply(t, w, int(status.Code), status)
}

// decodeBody decodes the JSON body of r into v.
func decodeBody(t *testing.T, r request, v any) {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: got Content-Type %q, want application/json", r.method, r.path, ct)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("%s %s: body: %v", r.method, r.path, err)
	}
}

// checkQuery checks that the query of r is want.
func checkQuery(t *testing.T, r request, want url.Values) {
	t.Helper()
	if diff := cmp.Diff(want, r.query); diff != "" {
		t.Errorf("%s %s: query (-want +got):\n%s", r.method, r.path, diff)
	}
}

// job returns a Volcano Job as the API server answers it.
func job(name string, phase vcbatch.JobPhase) *vcbatch.Job {
	j := logJob()
	j.TypeMeta = metav1.TypeMeta{Kind: "Job", APIVersion: "batch.volcano.sh/v1alpha1"}
	j.Name = name
	j.UID = "uid-1"
	j.ResourceVersion = "5"
	j.Labels = map[string]string{labelManagedBy: managedByValue}
	j.Annotations = map[string]string{scheduler.AnnotationAppSpec: `{"name":"app"}`}
	j.Status.State.Phase = phase
	return j
}

const jobsPath = "/apis/batch.volcano.sh/v1alpha1/namespaces/ml/jobs"

func TestSubmitRequest(t *testing.T) {
	c, api := connectFake(t, map[string]http.HandlerFunc{
		"POST " + jobsPath: func(w http.ResponseWriter, r *http.Request) {
			reply(t, w, http.StatusCreated, job("app", vcbatch.Pending))
		},
	})
	got, err := c.Submit(context.Background(), logJob(), SubmitOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "app" || got.UID != "uid-1" {
		t.Errorf("Submit returned job %q uid %q, want the server's job", got.Name, got.UID)
	}
	r := api.only(t)
	// The timeout comes from Options.Timeout, 30 seconds by default, as client-go sends it.
	checkQuery(t, r, url.Values{"dryRun": {"All"}, "fieldValidation": {"Strict"}, "timeout": {"30s"}})
	if ua := r.header.Get("User-Agent"); ua != "starpod-test" {
		t.Errorf("got User-Agent %q, want starpod-test", ua)
	}
	var sent vcbatch.Job
	decodeBody(t, r, &sent)
	if sent.APIVersion != "batch.volcano.sh/v1alpha1" || sent.Kind != "Job" || sent.Namespace != "ml" || len(sent.Spec.Tasks) != 3 {
		t.Errorf("sent job %s %s %s/%s with %d tasks, want batch.volcano.sh/v1alpha1 Job ml/app with 3",
			sent.APIVersion, sent.Kind, sent.Namespace, sent.Name, len(sent.Spec.Tasks))
	}
}

func TestSubmitAlreadyExists(t *testing.T) {
	c, _ := connectFake(t, map[string]http.HandlerFunc{
		"POST " + jobsPath: func(w http.ResponseWriter, r *http.Request) {
			replyStatus(t, w, apierrors.NewAlreadyExists(vcbatch.Resource("jobs"), "app"))
		},
	})
	_, err := c.Submit(context.Background(), logJob(), SubmitOptions{})
	var exists *AlreadyExistsError
	var status *apierrors.StatusError
	if !errors.As(err, &exists) || !errors.As(err, &status) || !apierrors.IsAlreadyExists(err) {
		t.Fatalf("got error %v (%T), want an *AlreadyExistsError and an *errors.StatusError", err, err)
	}
	if exists.Handle != (Handle{"ml", "app", ""}) {
		t.Errorf("got handle %s, want kubernetes://ml/app", exists.Handle)
	}
}

func TestGetNotFound(t *testing.T) {
	c, api := connectFake(t, map[string]http.HandlerFunc{
		"GET " + jobsPath + "/nope": func(w http.ResponseWriter, r *http.Request) {
			replyStatus(t, w, apierrors.NewNotFound(vcbatch.Resource("jobs"), "nope"))
		},
	})
	_, err := c.Get(context.Background(), Handle{AppID: "nope"})
	var status *apierrors.StatusError
	if !errors.As(err, &status) || !apierrors.IsNotFound(err) {
		t.Fatalf("got error %v (%T), want an *errors.StatusError of NotFound", err, err)
	}
	if want := `get job "nope": jobs.batch.volcano.sh "nope" not found`; !strings.HasSuffix(err.Error(), want) {
		t.Errorf("got error %q, want suffix %q", err, want)
	}
	checkQuery(t, api.only(t), url.Values{"timeout": {"30s"}})
}

func TestListRequest(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	c, api := connectFake(t, map[string]http.HandlerFunc{
		"GET /apis/batch.volcano.sh/v1alpha1/jobs": func(w http.ResponseWriter, r *http.Request) {
			a, b, c := job("a", vcbatch.Running), job("b", vcbatch.Completed), job("c", vcbatch.Pending)
			b.Namespace, c.Namespace = "dev", "dev"
			a.CreationTimestamp = metav1.NewTime(t0.Add(2 * time.Second))
			b.CreationTimestamp = metav1.NewTime(t0)
			c.CreationTimestamp = metav1.NewTime(t0.Add(2 * time.Second))
			reply(t, w, http.StatusOK, vcbatch.JobList{
				TypeMeta: metav1.TypeMeta{Kind: "JobList", APIVersion: "batch.volcano.sh/v1alpha1"},
				Items:    []vcbatch.Job{*b, *a, *c},
			})
		},
		// The JobSets are listed too: one waiting for Kueue.
		"GET /apis/jobset.x-k8s.io/v1alpha2/jobsets": func(w http.ResponseWriter, r *http.Request) {
			d := jobset.JobSet{
				ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "dev", CreationTimestamp: metav1.NewTime(t0.Add(time.Second)),
					Labels: map[string]string{scheduler.LabelKueueQueue: "q"}},
				Spec: jobset.JobSetSpec{Suspend: ptr(true)},
			}
			reply(t, w, http.StatusOK, jobset.JobSetList{
				TypeMeta: metav1.TypeMeta{Kind: "JobSetList", APIVersion: "jobset.x-k8s.io/v1alpha2"},
				Items:    []jobset.JobSet{d},
			})
		},
	})
	got, err := c.List(context.Background(), ListOptions{AllNamespaces: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, st := range got {
		ids = append(ids, st.Namespace+"/"+st.AppID+" "+string(st.State))
	}
	// Newest first across namespaces; apps of the same second by namespace, then app id.
	if diff := cmp.Diff([]string{"dev/c PENDING", "ml/a RUNNING", "dev/d PENDING", "dev/b SUCCEEDED"}, ids); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	// A list sends no timeout, as client-go's typed clients do: the HTTP client's bounds it.
	if len(api.requests) != 2 {
		t.Fatalf("got %d requests, want 2", len(api.requests))
	}
	for _, r := range api.requests {
		checkQuery(t, r, url.Values{"labelSelector": {labelManagedBy + "=" + managedByValue}})
	}
}

func TestDeleteRequest(t *testing.T) {
	c, api := connectFake(t, map[string]http.HandlerFunc{
		"GET " + jobsPath + "/app": func(w http.ResponseWriter, r *http.Request) {
			reply(t, w, http.StatusOK, job("app", vcbatch.Running))
		},
		"DELETE " + jobsPath + "/app": func(w http.ResponseWriter, r *http.Request) {
			reply(t, w, http.StatusOK, job("app", vcbatch.Running))
		},
	})
	if err := c.Delete(context.Background(), Handle{"ml", "app", ""}, OpOptions{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"GET " + jobsPath + "/app", "DELETE " + jobsPath + "/app"}, api.calls()); diff != "" {
		t.Fatalf("requests (-want +got):\n%s", diff)
	}
	var opts metav1.DeleteOptions
	decodeBody(t, api.requests[1], &opts)
	if opts.PropagationPolicy == nil || *opts.PropagationPolicy != metav1.DeletePropagationBackground {
		t.Errorf("got delete options %+v, want propagation policy Background", opts)
	}
	if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != "uid-1" {
		t.Errorf("got delete options %+v, want the precondition of the job's UID", opts)
	}
}

// TestRefuseForeignJob: cancel and delete refuse a Volcano Job that starpod did not make,
// unless forced.
func TestRefuseForeignJob(t *testing.T) {
	c, api := connectFake(t, map[string]http.HandlerFunc{
		"GET " + jobsPath + "/other": func(w http.ResponseWriter, r *http.Request) {
			j := job("other", vcbatch.Running)
			j.Annotations, j.Labels = nil, nil
			reply(t, w, http.StatusOK, j)
		},
		"DELETE " + jobsPath + "/other": func(w http.ResponseWriter, r *http.Request) {
			reply(t, w, http.StatusOK, job("other", vcbatch.Running))
		},
		"POST /apis/bus.volcano.sh/v1alpha1/namespaces/ml/commands": func(w http.ResponseWriter, r *http.Request) {
			reply(t, w, http.StatusCreated, vcbus.Command{
				TypeMeta:   metav1.TypeMeta{Kind: "Command", APIVersion: "bus.volcano.sh/v1alpha1"},
				ObjectMeta: metav1.ObjectMeta{Name: "other-abortjob", Namespace: "ml"},
			})
		},
	})
	h := Handle{"ml", "other", ""}
	_, err := c.Cancel(context.Background(), h, OpOptions{})
	var e *Error
	if !errors.Is(err, ErrNotStarpod) || !errors.As(err, &e) || e.Op != "cancel" {
		t.Errorf("Cancel of a foreign job: got %v, want an *Error of op cancel caused by ErrNotStarpod", err)
	}
	err = c.Delete(context.Background(), h, OpOptions{})
	if !errors.Is(err, ErrNotStarpod) || !errors.As(err, &e) || e.Op != "delete" {
		t.Errorf("Delete of a foreign job: got %v, want an *Error of op delete caused by ErrNotStarpod", err)
	}
	want := `cluster "fake" (` // the rest names the server
	if err != nil && (!strings.HasPrefix(err.Error(), want) ||
		!strings.HasSuffix(err.Error(), `, namespace "ml": delete job "other": not made by starpod (no starpod.dev/app-spec annotation)`)) {
		t.Errorf("Delete of a foreign job: message %q", err)
	}
	if diff := cmp.Diff([]string{"GET " + jobsPath + "/other", "GET " + jobsPath + "/other"}, api.calls()); diff != "" {
		t.Errorf("requests when refusing (-want +got):\n%s", diff)
	}
	if res, err := c.Cancel(context.Background(), h, OpOptions{Force: true}); err != nil || res != CancelRequested {
		t.Errorf("forced Cancel: got %v, %v, want CancelRequested", res, err)
	}
	if err := c.Delete(context.Background(), h, OpOptions{Force: true}); err != nil {
		t.Errorf("forced Delete: %v", err)
	}
}

// TestCancelStaleCommand cancels a job whose AbortJob command is left from an earlier job of
// the same name: the stale command is deleted, on the condition of its UID, and made afresh.
func TestCancelStaleCommand(t *testing.T) {
	const commandsPath = "/apis/bus.volcano.sh/v1alpha1/namespaces/ml/commands"
	posts := 0
	c, api := connectFake(t, map[string]http.HandlerFunc{
		"GET " + jobsPath + "/app": func(w http.ResponseWriter, r *http.Request) {
			reply(t, w, http.StatusOK, job("app", vcbatch.Running))
		},
		"POST " + commandsPath: func(w http.ResponseWriter, r *http.Request) {
			if posts++; posts == 1 {
				replyStatus(t, w, apierrors.NewAlreadyExists(vcbus.Resource("commands"), "app-abortjob"))
				return
			}
			reply(t, w, http.StatusCreated, vcbus.Command{
				TypeMeta:   metav1.TypeMeta{Kind: "Command", APIVersion: "bus.volcano.sh/v1alpha1"},
				ObjectMeta: metav1.ObjectMeta{Name: "app-abortjob", Namespace: "ml"},
			})
		},
		"GET " + commandsPath + "/app-abortjob": func(w http.ResponseWriter, r *http.Request) {
			reply(t, w, http.StatusOK, vcbus.Command{
				TypeMeta:     metav1.TypeMeta{Kind: "Command", APIVersion: "bus.volcano.sh/v1alpha1"},
				ObjectMeta:   metav1.ObjectMeta{Name: "app-abortjob", Namespace: "ml", UID: "stale"},
				Action:       string(vcbus.AbortJobAction),
				TargetObject: &metav1.OwnerReference{UID: "uid-0"},
			})
		},
		"DELETE " + commandsPath + "/app-abortjob": func(w http.ResponseWriter, r *http.Request) {
			reply(t, w, http.StatusOK, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
		},
	})
	got, err := c.Cancel(context.Background(), Handle{"ml", "app", ""}, OpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got != CancelRequested {
		t.Errorf("got %v, want CancelRequested", got)
	}
	want := []string{
		"GET " + jobsPath + "/app",
		"POST " + commandsPath,
		"GET " + commandsPath + "/app-abortjob",
		"DELETE " + commandsPath + "/app-abortjob",
		"POST " + commandsPath,
	}
	if diff := cmp.Diff(want, api.calls()); diff != "" {
		t.Fatalf("requests (-want +got):\n%s", diff)
	}
	var cmd vcbus.Command
	decodeBody(t, api.requests[4], &cmd)
	if cmd.APIVersion != "bus.volcano.sh/v1alpha1" || cmd.Kind != "Command" || cmd.Action != string(vcbus.AbortJobAction) ||
		cmd.TargetObject == nil || cmd.TargetObject.UID != "uid-1" {
		t.Errorf("sent command %+v, want a bus.volcano.sh/v1alpha1 Command to abort job uid-1", cmd)
	}
	var opts metav1.DeleteOptions
	decodeBody(t, api.requests[3], &opts)
	if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != "stale" {
		t.Errorf("got delete options %+v, want the precondition of UID stale", opts)
	}
}

func TestLogsRequests(t *testing.T) {
	c, api := connectFake(t, map[string]http.HandlerFunc{
		"GET " + jobsPath + "/app": func(w http.ResponseWriter, r *http.Request) {
			reply(t, w, http.StatusOK, job("app", vcbatch.Running))
		},
		"GET /api/v1/namespaces/ml/pods": func(w http.ResponseWriter, r *http.Request) {
			p := pod("trainer-0", "main")
			p.Spec.NodeName = "node-1"
			reply(t, w, http.StatusOK, corev1.PodList{
				TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
				Items:    []corev1.Pod{p, pod("ps-0", "ps")},
			})
		},
		"GET /api/v1/namespaces/ml/pods/app-trainer-0/log": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "epoch 1\nepoch 2\n")
		},
	})
	tail := int64(2)
	var out strings.Builder
	target := LogTarget{Handle: Handle{"ml", "app", ""}, Role: "trainer", Replica: 0}
	opts := LogOptions{Follow: true, Since: 90 * time.Second, Tail: &tail, Container: "main"}
	if err := c.Logs(context.Background(), target, opts, &out); err != nil {
		t.Fatal(err)
	}
	if want := "trainer/0 epoch 1\ntrainer/0 epoch 2\n"; out.String() != want {
		t.Errorf("got logs %q, want %q", out.String(), want)
	}
	list, logs := api.requests[1], api.requests[2]
	checkQuery(t, list, url.Values{"labelSelector": {vcbatch.JobNameKey + "=app"}})
	// Pods are asked for in protobuf first, as client-go's typed client does.
	if accept := list.header.Get("Accept"); !strings.HasPrefix(accept, "application/vnd.kubernetes.protobuf") {
		t.Errorf("pods: got Accept %q, want protobuf first", accept)
	}
	checkQuery(t, logs, url.Values{"container": {"main"}, "follow": {"true"}, "sinceSeconds": {"90"}, "tailLines": {"2"}})
}

// TestWaitRequests waits for a job through a bookmark and an expired watch.
func TestWaitRequests(t *testing.T) {
	gets, watches := 0, 0
	event := func(w http.ResponseWriter, typ string, obj any) {
		data, err := json.Marshal(map[string]any{"type": typ, "object": obj})
		if err != nil {
			t.Error(err)
		}
		w.Write(append(data, '\n'))
		w.(http.Flusher).Flush()
	}
	c, api := connectFake(t, map[string]http.HandlerFunc{
		"GET " + jobsPath + "/app": func(w http.ResponseWriter, r *http.Request) {
			j := job("app", vcbatch.Pending)
			if gets++; gets == 2 {
				j.Status.State.Phase = vcbatch.Running
				j.ResourceVersion = "8"
			}
			reply(t, w, http.StatusOK, j)
		},
		"GET " + jobsPath: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if watches++; watches == 1 {
				bookmark := &vcbatch.Job{
					TypeMeta:   metav1.TypeMeta{Kind: "Job", APIVersion: "batch.volcano.sh/v1alpha1"},
					ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7"},
				}
				event(w, "BOOKMARK", bookmark)
				gone := apierrors.NewResourceExpired("too old resource version: 7").ErrStatus
				gone.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
				event(w, "ERROR", gone)
				return
			}
			event(w, "MODIFIED", job("app", vcbatch.Completed))
		},
	})
	var states []string
	st, err := c.Wait(context.Background(), Handle{"ml", "app", ""}, func(s Status) { states = append(states, string(s.State)) })
	if err != nil {
		t.Fatal(err)
	}
	if st.State != Succeeded {
		t.Errorf("got state %s, want SUCCEEDED", st.State)
	}
	if diff := cmp.Diff([]string{"PENDING", "RUNNING", "SUCCEEDED"}, states); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	var queries []url.Values
	for _, r := range api.requests {
		if r.path == jobsPath {
			queries = append(queries, r.query)
		}
	}
	watch := func(rv string) url.Values {
		return url.Values{
			"watch": {"true"}, "allowWatchBookmarks": {"true"},
			"fieldSelector": {"metadata.name=app"}, "resourceVersion": {rv},
		}
	}
	if diff := cmp.Diff([]url.Values{watch("5"), watch("8")}, queries); diff != "" {
		t.Errorf("watches (-want +got):\n%s", diff)
	}
}

// TestClientTimeouts checks that ordinary requests have the timeout and that watches and
// log streams have none.
func TestClientTimeouts(t *testing.T) {
	file := writeKubeconfig(t)
	for _, test := range []struct {
		timeout, want time.Duration
	}{
		{0, defaultTimeout},
		{time.Minute, time.Minute},
	} {
		c, err := Connect(Options{Kubeconfig: file, Timeout: test.timeout})
		if err != nil {
			t.Fatal(err)
		}
		for _, rc := range []struct {
			name string
			got  time.Duration
			want time.Duration
		}{
			{"api core", c.api.core.Client.Timeout, test.want},
			{"api batch", c.api.batch.Client.Timeout, test.want},
			{"api bus", c.api.bus.Client.Timeout, test.want},
			{"stream core", c.stream.core.Client.Timeout, 0},
			{"stream batch", c.stream.batch.Client.Timeout, 0},
		} {
			if rc.got != rc.want {
				t.Errorf("Timeout %v: %s client: got timeout %v, want %v", test.timeout, rc.name, rc.got, rc.want)
			}
		}
	}
}

// TestAPIPaths checks the group version and path of each client.
func TestAPIPaths(t *testing.T) {
	c, err := Connect(Options{Kubeconfig: writeKubeconfig(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, test := range []struct {
		res  resource
		want string
	}{
		{c.pods("ml"), "https://127.0.0.1:6443/api/v1/namespaces/ml/pods?timeout=30s"},
		{c.jobs(""), "https://127.0.0.1:6443/apis/batch.volcano.sh/v1alpha1/jobs?timeout=30s"},
		{c.commands("ml"), "https://127.0.0.1:6443/apis/bus.volcano.sh/v1alpha1/namespaces/ml/commands?timeout=30s"},
	} {
		if got := test.res.request(http.MethodGet).URL().String(); got != test.want {
			t.Errorf("got %s, want %s", got, test.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
