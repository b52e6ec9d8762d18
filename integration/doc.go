// Package integration tests starpod against a real kube-apiserver, started in process with
// an embedded etcd, once for the whole test binary. It is a module of its own, so that the
// main module does not depend on Kubernetes' server code.
//
// Run it with ./run-tests.sh, or "go test ./..." in this directory. The first build compiles
// the API server and takes long (about a quarter of an hour on two cores); later ones are
// quick.
package integration
