package integration

// This file starts the cluster the tests share: etcd embedded, a kube-apiserver in process,
// the Volcano CRDs and JobSet's, a kubeconfig, and the starpod binary built from the
// repository.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	apiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	volcano "volcano.sh/apis/pkg/client/clientset/versioned"
)

// The shared cluster, set up by TestMain.
var (
	kubeconfig string               // the kubeconfig file of the API server
	starpodBin string               // the starpod binary
	restConfig *rest.Config         // the API server's client config
	kube       kubernetes.Interface // a client of the API server
	vc         volcano.Interface    // a Volcano client of the API server
	serverLog  string               // where etcd and the API server log
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

// runMain sets up the cluster, runs the tests and tears the cluster down. The server's logs
// go to a file, whose tail is printed if the setup fails.
func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "starpod-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	serverLog = filepath.Join(dir, "server.log")
	logFile, err := os.Create(serverLog)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer logFile.Close()
	quietKlog(logFile)

	tb := &mainTB{log: logFile}
	defer tb.cleanup()
	if err := setUp(tb, dir); err != nil {
		fmt.Fprintf(os.Stderr, "integration: setting up the cluster: %v\n", err)
		printTail(serverLog)
		return 1
	}
	return m.Run()
}

// setUp starts etcd and the API server, installs the CRDs, writes the kubeconfig and builds
// starpod.
func setUp(tb *mainTB, dir string) error {
	// Build starpod from the repository, as a user would, while the servers start.
	starpodBin = filepath.Join(dir, "starpod")
	build := exec.Command("go", "build", "-o", starpodBin, "./cmd/starpod")
	build.Dir = ".."
	var buildOut bytes.Buffer
	build.Stdout, build.Stderr = &buildOut, &buildOut
	if err := build.Start(); err != nil {
		return fmt.Errorf("go build starpod: %v", err)
	}
	buildDone := make(chan error, 1)
	go func() { buildDone <- build.Wait() }()

	start := time.Now()
	etcdURL, stopEtcd, err := startEtcd(filepath.Join(dir, "etcd"))
	if err != nil {
		return fmt.Errorf("etcd: %v", err)
	}
	tb.Cleanup(stopEtcd)

	storage := storagebackend.NewDefaultConfig("/registry", nil)
	storage.Transport.ServerList = []string{etcdURL}
	server, err := apiservertesting.StartTestServer(tb,
		&apiservertesting.TestServerInstanceOptions{DisableInvariantChecks: true},
		[]string{
			"--disable-admission-plugins=ServiceAccount",
			"--bind-address=127.0.0.1",
			// As on most clusters: the example mounts a device, which needs a privileged container.
			"--allow-privileged=true",
		},
		storage)
	if err != nil {
		return fmt.Errorf("kube-apiserver: %v", err)
	}
	tb.Cleanup(server.TearDownFn)
	fmt.Fprintf(tb.log, "integration: API server ready at %s after %s\n", server.ClientConfig.Host, time.Since(start).Round(time.Millisecond))

	restConfig = server.ClientConfig
	if kube, err = kubernetes.NewForConfig(restConfig); err != nil {
		return err
	}
	// Custom resources speak JSON, not the protobuf of the server's loopback config.
	jsonConfig := rest.CopyConfig(restConfig)
	jsonConfig.ContentType = "application/json"
	jsonConfig.AcceptContentTypes = "application/json"
	if vc, err = volcano.NewForConfig(jsonConfig); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := installCRDs(ctx, restConfig); err != nil {
		return fmt.Errorf("CRDs: %v", err)
	}
	if err := installJobSetCRD(ctx, restConfig); err != nil {
		return fmt.Errorf("JobSet CRD: %v", err)
	}
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, restConfig); err != nil {
		return err
	}
	if err := <-buildDone; err != nil {
		return fmt.Errorf("go build starpod: %v\n%s", err, buildOut.Bytes())
	}
	return nil
}

// startEtcd starts an embedded etcd on loopback ports, storing in dir without fsync, and
// returns its client URL and a function that stops it.
func startEtcd(dir string) (string, func(), error) {
	cfg := embed.NewConfig()
	cfg.Name = "starpod-integration"
	cfg.Dir = dir
	cfg.UnsafeNoFsync = true
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{serverLog}
	clientPort, err := freePort()
	if err != nil {
		return "", nil, err
	}
	peerPort, err := freePort()
	if err != nil {
		return "", nil, err
	}
	client := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(clientPort))}
	peer := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(peerPort))}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.ListenMetricsUrls = nil
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return "", nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return "", nil, err
	case <-time.After(time.Minute):
		e.Close()
		return "", nil, errors.New("not ready after a minute")
	}
	return client.String(), e.Close, nil
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeKubeconfig writes a kubeconfig for cfg, with one context "integration".
func writeKubeconfig(file string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["integration"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.TLSClientConfig.CAData,
		TLSServerName:            cfg.TLSClientConfig.ServerName,
		InsecureSkipTLSVerify:    cfg.TLSClientConfig.Insecure,
	}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		Token:                 cfg.BearerToken,
		ClientCertificateData: cfg.TLSClientConfig.CertData,
		ClientKeyData:         cfg.TLSClientConfig.KeyData,
	}
	kc.Contexts["integration"] = &clientcmdapi.Context{Cluster: "integration", AuthInfo: "admin"}
	kc.CurrentContext = "integration"
	return clientcmd.WriteToFile(*kc, file)
}

// quietKlog sends the process-wide klog output to w instead of standard error.
func quietKlog(w *os.File) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	fs.Set("logtostderr", "false")
	fs.Set("alsologtostderr", "false")
	fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(w)
}

// printTail prints the end of a log file to standard error.
func printTail(file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		return
	}
	const max = 8000
	if len(data) > max {
		data = data[len(data)-max:]
	}
	fmt.Fprintf(os.Stderr, "--- end of %s ---\n%s\n", file, data)
}

// mainTB is the testing.TB that TestMain gives the API server: the server lives for the
// whole test binary, not one test. Its log goes to the server's log file; Fatal and
// FailNow panic, which only setUp can meet.
type mainTB struct {
	log      *os.File
	cleanups []func()
	failed   bool
}

func (tb *mainTB) Attr(key, value string)         {}
func (tb *mainTB) Chdir(dir string)               { panic("integration: Chdir in TestMain") }
func (tb *mainTB) Cleanup(f func())               { tb.cleanups = append(tb.cleanups, f) }
func (tb *mainTB) Error(args ...any)              { tb.failed = true; tb.Log(args...) }
func (tb *mainTB) Errorf(format string, a ...any) { tb.failed = true; tb.Logf(format, a...) }
func (tb *mainTB) Fail()                          { tb.failed = true }
func (tb *mainTB) FailNow()                       { panic("integration: FailNow in TestMain") }
func (tb *mainTB) Failed() bool                   { return tb.failed }
func (tb *mainTB) Fatal(args ...any)              { tb.Log(args...); tb.FailNow() }
func (tb *mainTB) Fatalf(format string, a ...any) { tb.Logf(format, a...); tb.FailNow() }
func (tb *mainTB) Helper()                        {}
func (tb *mainTB) Log(args ...any)                { fmt.Fprintln(tb.log, args...) }
func (tb *mainTB) Logf(format string, a ...any)   { fmt.Fprintf(tb.log, format+"\n", a...) }
func (tb *mainTB) Name() string                   { return "TestMain" }
func (tb *mainTB) Setenv(key, value string)       { os.Setenv(key, value) }
func (tb *mainTB) Skip(args ...any)               { panic("integration: Skip in TestMain") }
func (tb *mainTB) Skipf(format string, a ...any)  { panic("integration: Skip in TestMain") }
func (tb *mainTB) SkipNow()                       { panic("integration: Skip in TestMain") }
func (tb *mainTB) Skipped() bool                  { return false }
func (tb *mainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "starpod-integration-tb-")
	if err != nil {
		panic(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// cleanup runs the cleanups in reverse order, as testing does.
func (tb *mainTB) cleanup() {
	for i := len(tb.cleanups) - 1; i >= 0; i-- {
		tb.cleanups[i]()
	}
}

// isolatedHome is a $HOME with no kubeconfig, so starpod reads only what a test gives it.
func isolatedHome(t *testing.T) string {
	return t.TempDir()
}

// result is the outcome of one starpod command.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// starpod runs the starpod binary with args against the shared cluster and returns what it
// printed and its exit code. It fails the test if the command does not finish within two
// minutes (a bound on a hang, not a timing assertion).
func starpod(t *testing.T, args ...string) result {
	t.Helper()
	return starpodEnv(t, []string{"KUBECONFIG=" + kubeconfig}, args...)
}

// starpodEnv is starpod with env added to a minimal environment.
func starpodEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, starpodBin, args...)
	cmd.Dir = ".."
	cmd.Env = append([]string{"HOME=" + isolatedHome(t), "PATH=" + os.Getenv("PATH")}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("starpod %s: did not finish within two minutes\n%s", strings.Join(args, " "), r)
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("starpod %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// A started is a starpod command running in the background, its output in buffers that the
// test reads as it runs (see startStarpod).
type started struct {
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
}

// startStarpod starts the starpod binary with args against the shared cluster and returns it
// running. It is killed if it has not finished within two minutes (a bound on a hang, not a
// timing assertion).
func startStarpod(t *testing.T, args ...string) *started {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	s := &started{cmd: exec.CommandContext(ctx, starpodBin, args...)}
	s.cmd.Dir = ".."
	s.cmd.Env = []string{"HOME=" + t.TempDir(), "KUBECONFIG=" + kubeconfig}
	s.cmd.Stdout, s.cmd.Stderr = &s.stdout, &s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// wait waits for the command to end and returns what it printed and its exit code.
func (s *started) wait(t *testing.T) result {
	t.Helper()
	err := s.cmd.Wait()
	r := result{stdout: s.stdout.String(), stderr: s.stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}
