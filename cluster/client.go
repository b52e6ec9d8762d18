package cluster

// This file defines the requests that starpod makes of the API server, on the pods of
// core/v1, the Jobs of batch.volcano.sh/v1alpha1, the Commands of bus.volcano.sh/v1alpha1,
// the JobSets of jobset.x-k8s.io/v1alpha2 and the Jobs of batch/v1 that JobSets own. They
// are made with client-go's REST client and a scheme of these groups alone, not
// with the generated clientsets: those link and register every API group of Kubernetes, which
// cost every starpod process, overlay workers included, some 9 MiB of memory at start.

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcbus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
)

// codecs are the encoders and decoders of the scheme of the groups starpod uses.
type codecs struct {
	serializer runtime.NegotiatedSerializer // the bodies of requests and responses, watch events
	params     runtime.ParameterCodec       // options as query parameters
}

// apiCodecs returns the codecs, made on first use, so that a starpod process that never
// contacts a cluster does not build them.
var apiCodecs = sync.OnceValue(func() codecs {
	scheme := runtime.NewScheme()
	// As client-go's own scheme: Status and the other unversioned types of meta/v1.
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	// Each of these adds meta/v1's options and WatchEvent to its group version too.
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, vcbatch.AddToScheme, vcbus.AddToScheme, jobset.AddToScheme, batchv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			panic(err) // the packages' own registrations do not fail
		}
	}
	return codecs{
		serializer: serializer.NewCodecFactory(scheme).WithoutConversion(),
		params:     runtime.NewParameterCodec(scheme),
	}
})

// clients are the REST clients of one configuration, one for each group version, sharing
// one HTTP client, as the clients of a generated clientset do.
type clients struct {
	core  *rest.RESTClient // core/v1: pods
	batch *rest.RESTClient // batch.volcano.sh/v1alpha1: jobs
	bus   *rest.RESTClient // bus.volcano.sh/v1alpha1: commands
	sets  *rest.RESTClient // jobset.x-k8s.io/v1alpha2: jobsets
	kjobs *rest.RESTClient // batch/v1: the Jobs of JobSets
}

// newClients returns the REST clients of cfg.
func newClients(cfg *rest.Config) (*clients, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	var cs clients
	if cs.core, err = restClient(cfg, hc, "/api", corev1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	if cs.batch, err = restClient(cfg, hc, "/apis", vcbatch.SchemeGroupVersion); err != nil {
		return nil, err
	}
	if cs.bus, err = restClient(cfg, hc, "/apis", vcbus.SchemeGroupVersion); err != nil {
		return nil, err
	}
	if cs.sets, err = restClient(cfg, hc, "/apis", jobset.GroupVersion); err != nil {
		return nil, err
	}
	if cs.kjobs, err = restClient(cfg, hc, "/apis", batchv1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	return &cs, nil
}

// restClient returns the REST client of group version gv, served under apiPath.
func restClient(cfg *rest.Config, hc *http.Client, apiPath string, gv schema.GroupVersion) (*rest.RESTClient, error) {
	c := *cfg
	c.APIPath = apiPath
	c.GroupVersion = &gv
	c.NegotiatedSerializer = apiCodecs().serializer
	return rest.RESTClientForConfigAndClient(&c, hc)
}

// A resource is a resource of one namespace ("" for all namespaces) and the REST client of
// its group version. Its methods make the requests of the generated typed clients; their
// errors from the API server are *errors.StatusError values.
type resource struct {
	client    *rest.RESTClient
	name      string // the resource, such as "jobs"
	namespace string
	protobuf  bool // ask for protobuf, as client-go does for the built-in types
}

// jobs returns the Volcano Jobs of namespace ns, for ordinary requests.
func (c *Client) jobs(ns string) resource {
	return resource{client: c.api.batch, name: "jobs", namespace: ns}
}

// commands returns the Volcano Commands of namespace ns, for ordinary requests.
func (c *Client) commands(ns string) resource {
	return resource{client: c.api.bus, name: "commands", namespace: ns}
}

// pods returns the pods of namespace ns, for ordinary requests.
func (c *Client) pods(ns string) resource {
	return resource{client: c.api.core, name: "pods", namespace: ns, protobuf: true}
}

// jobSets returns the JobSets of namespace ns, for ordinary requests.
func (c *Client) jobSets(ns string) resource {
	return resource{client: c.api.sets, name: "jobsets", namespace: ns}
}

// kubeJobs returns the Jobs (batch/v1) of namespace ns, for ordinary requests.
func (c *Client) kubeJobs(ns string) resource {
	return resource{client: c.api.kjobs, name: "jobs", namespace: ns, protobuf: true}
}

// watch watches the objects of resource of namespace ns that opts select, through client,
// with no timeout.
func (c *Client) watch(ctx context.Context, client *rest.RESTClient, resource, ns string, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return client.Get().
		NamespaceIfScoped(ns, ns != "").
		Resource(resource).
		VersionedParams(&opts, apiCodecs().params).
		Timeout(listTimeout(opts)).
		Watch(ctx)
}

// listTimeout returns the timeout of a list or a watch: opts.TimeoutSeconds, else none, in
// place of the client's. As with client-go's typed clients, the API server is then sent no
// timeout parameter, and the HTTP client's own timeout, if any, still bounds the request.
func listTimeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}

// podLogs streams the log of a container of pod name in namespace ns, with no timeout. The
// caller closes the stream.
func (c *Client) podLogs(ctx context.Context, ns, name string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	return c.stream.core.Get().
		Namespace(ns).
		Resource("pods").
		Name(name).
		SubResource("log").
		VersionedParams(opts, apiCodecs().params).
		Stream(ctx)
}

// request starts a request of verb on r.
func (r resource) request(verb string) *rest.Request {
	return r.client.Verb(verb).
		UseProtobufAsDefaultIfPreferred(r.protobuf).
		NamespaceIfScoped(r.namespace, r.namespace != "").
		Resource(r.name)
}

// create creates obj with opts and decodes the object that the API server answers into into.
func (r resource) create(ctx context.Context, obj runtime.Object, opts metav1.CreateOptions, into runtime.Object) error {
	return r.request(http.MethodPost).
		VersionedParams(&opts, apiCodecs().params).
		Body(obj).
		Do(ctx).
		Into(into)
}

// get decodes the object called name into into.
func (r resource) get(ctx context.Context, name string, into runtime.Object) error {
	return r.request(http.MethodGet).
		Name(name).
		Do(ctx).
		Into(into)
}

// list decodes the list of the objects that opts select into into.
func (r resource) list(ctx context.Context, opts metav1.ListOptions, into runtime.Object) error {
	return r.request(http.MethodGet).
		VersionedParams(&opts, apiCodecs().params).
		Timeout(listTimeout(opts)).
		Do(ctx).
		Into(into)
}

// patch applies the merge patch data to the object called name.
func (r resource) patch(ctx context.Context, name string, data []byte, into runtime.Object) error {
	return r.request(http.MethodPatch).
		Name(name).
		SetHeader("Content-Type", string(types.MergePatchType)).
		Body(data).
		Do(ctx).
		Into(into)
}

// delete deletes the object called name, with opts.
func (r resource) delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.request(http.MethodDelete).
		Name(name).
		Body(&opts).
		Do(ctx).
		Error()
}
