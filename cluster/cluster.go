// Package cluster submits starpod apps to a Kubernetes cluster as Volcano Jobs or JobSets and
// operates on them afterwards: status, describe, logs, list, cancel and delete.
//
// To reach a cluster, use [Connect] with [Options]: the kubeconfig comes from
// Options.Kubeconfig, else $KUBECONFIG, else ~/.kube/config, with Options.Context selecting a
// context; a process running in a pod with no kubeconfig uses the in-cluster configuration. The
// namespace is Options.Namespace, else the context's, else "default".
//
// An app on a cluster is named by a [Handle], written kubernetes://<namespace>/<app_id>; the
// app id is the name of its Volcano Job. An app run as a JobSet is jobset://<namespace>/<app_id>
// ([Client.SubmitJobSet] submits it); a bare app id names the Volcano Job of that name if there
// is one, else the JobSet. Use [ParseHandle] to read one from the command line. The states of a
// JobSet's app come from the JobSet, its Jobs and their pods ([StateOfJobSet]).
//
// The operations are methods of [Client]: [Client.Submit], [Client.Get], [Client.Status],
// [Client.Wait], [Client.Logs], [Client.List], [Client.Cancel] and [Client.Delete]; to
// describe an app, [Client.Get] its job and read the app back with [scheduler.AppFromJob]. Their
// errors are *[Error] values that name the cluster, namespace and object, and keep the API
// server's own error (an *errors.StatusError from k8s.io/apimachinery) as the cause.
//
// The mapping from Volcano phases to app and replica states ([AppState], [AppStateOf],
// [ReplicaStateOf], [StateOf]) follows TorchX's Kubernetes scheduler, and the formatting of
// what the CLI prints ([FormatStatus], [Progress], [FormatLogLine]) is done here too; none of
// these needs a cluster.
//
// The labels and annotations read back from jobs are the scheduler package's; this package
// imports scheduler, never the reverse.
package cluster

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Options selects a cluster and a namespace. The zero value uses the default kubeconfig, its
// current context and that context's namespace.
type Options struct {
	// Kubeconfig is the path of a kubeconfig file. If empty, $KUBECONFIG is used (a list of
	// files, as kubectl reads it), else ~/.kube/config, else the in-cluster configuration.
	Kubeconfig string
	// Context is the name of the kubeconfig context to use. If empty, the current context.
	Context string
	// Namespace overrides the context's namespace.
	Namespace string
	// Timeout bounds each request that is not a watch or a log stream. Zero means 30 seconds.
	Timeout time.Duration
	// UserAgent is sent with every request. If empty, "starpod".
	UserAgent string
}

// defaultTimeout bounds a single ordinary request, dialTimeout the TCP connection to the API
// server, so that a kubeconfig that points nowhere fails instead of hanging.
const (
	defaultTimeout = 30 * time.Second
	dialTimeout    = 10 * time.Second
)

// A Client operates on the starpod apps of one cluster. Its methods may be called from
// several goroutines at once.
type Client struct {
	name      string // the cluster as errors name it
	namespace string // the namespace of handles that have none

	api    *clients // ordinary requests, with a timeout
	stream *clients // watches and log streams, without a timeout
}

// ErrNoConfig is the error of Connect when no kubeconfig is given or found and the process
// does not run in a pod.
var ErrNoConfig = errors.New("no cluster configured: no kubeconfig given, none in $KUBECONFIG or ~/.kube/config, and not running in a pod")

// Connect loads the cluster configuration that opts select and returns a client for it. It
// does not contact the API server: a cluster that cannot be reached is reported by the first
// operation, as an *Error.
func Connect(opts Options) (*Client, error) {
	cc := clientConfig(opts.Kubeconfig, opts.Context)
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, ErrNoConfig
		}
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	name := clusterName(cc, opts.Context, cfg.Host)

	ns := opts.Namespace
	if ns == "" {
		ns, _, err = cc.Namespace()
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
		if ns == "" {
			ns = "default"
		}
	}

	ua := opts.UserAgent
	if ua == "" {
		ua = "starpod"
	}
	cfg.UserAgent = ua
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	cfg.Dial = dialer.DialContext

	streamCfg := rest.CopyConfig(cfg)
	cfg.Timeout = opts.Timeout
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultTimeout
	}

	c := &Client{name: name, namespace: ns}
	if c.api, err = newClients(cfg); err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	if c.stream, err = newClients(streamCfg); err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	return c, nil
}

// clientConfig returns the kubeconfig loader: the file kubeconfig, else $KUBECONFIG, else
// ~/.kube/config, else the in-cluster configuration, with context as the current context
// when it is set.
func clientConfig(kubeconfig, context string) clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
}

// ContextNamespace returns the namespace of the kubeconfig context that kubeconfig and
// context select (as Connect chooses them), or "default" when that context names none or
// there is no configuration. It reads only local files and never contacts a cluster, so an
// offline dry run shows the namespace a real run would use.
func ContextNamespace(kubeconfig, context string) string {
	ns, _, err := clientConfig(kubeconfig, context).Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}

// clusterName names the cluster for messages: the kubeconfig context and the server, or
// "in-cluster" and the server.
func clusterName(cc clientcmd.ClientConfig, context, host string) string {
	if context == "" {
		if raw, err := cc.RawConfig(); err == nil {
			context = raw.CurrentContext
		}
	}
	if context == "" {
		return fmt.Sprintf("in-cluster (%s)", host)
	}
	return fmt.Sprintf("%q (%s)", context, host)
}

// Name returns the cluster as messages name it: the kubeconfig context and the API server's
// address, such as `"kind-dev" (https://127.0.0.1:6443)`.
func (c *Client) Name() string { return c.name }

// Namespace returns the namespace of handles that name none: Options.Namespace, else the
// context's namespace, else "default".
func (c *Client) Namespace() string { return c.namespace }

// An Error reports a failed operation on a cluster object. Err is the cause; for an error
// from the API server it is an *errors.StatusError from k8s.io/apimachinery.
type Error struct {
	Cluster   string // the cluster, as [Client.Name] gives it
	Namespace string // the namespace, or "" for all namespaces
	Op        string // the operation: "create", "get", "list", "watch", "delete", "logs"
	Object    string // the object, such as `job "llama-ft-x7k2"`
	Err       error
}

// Error returns the message: the cluster, namespace, operation and object, then the cause,
// then, for an API error with several causes, each cause on a line of its own, indented by a
// tab, as "field.path: message".
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster %s", e.Cluster)
	if e.Namespace != "" {
		fmt.Fprintf(&b, ", namespace %q", e.Namespace)
	}
	msg := e.Err.Error()
	fmt.Fprintf(&b, ": %s %s: %s", e.Op, e.Object, msg)
	// The API's message names its causes in one line; list them one a line, unless there
	// is only one, which the message shows well enough.
	causes := Causes(e.Err)
	if len(causes) == 1 && strings.Contains(msg, causes[0]) {
		causes = nil
	}
	for _, c := range causes {
		b.WriteString("\n\t")
		b.WriteString(c)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Causes returns the causes of an API error (its Status.Details.Causes), each as
// "field.path: message", in the order the API server gave them. It returns nil if err is no
// API error or has no causes.
func Causes(err error) []string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return nil
	}
	details := status.Status().Details
	if details == nil {
		return nil
	}
	var causes []string
	for _, c := range details.Causes {
		msg := c.Message
		if msg == "" {
			msg = string(c.Type)
		}
		if c.Field != "" {
			msg = c.Field + ": " + msg
		}
		causes = append(causes, msg)
	}
	return causes
}

// errorf wraps err as an *Error about an object of namespace ns.
func (c *Client) errorf(ns, op string, err error, format string, args ...any) error {
	return &Error{Cluster: c.name, Namespace: ns, Op: op, Object: fmt.Sprintf(format, args...), Err: err}
}
