// Command image builds the container image of starpod's webhook without a container daemon,
// with go-containerregistry: one layer holding /starpod, a static binary (CGO_ENABLED=0,
// built from this repository), on no base image; the entrypoint is /starpod, the user the
// non-root 65532:65532 that deploy/deployment.yaml runs as, and nothing in the image is
// written at run time, so that a read-only root file system serves. The image is written as
// an OCI image layout (a directory: skopeo, crane, oras and containerd read it) and, if asked,
// as a tarball that docker load and podman load read.
//
//	cd scripts/image && go run . -oci ../../bin/image -tarball ../../bin/starpod.tar
//
// The image's name defaults to the one deploy/deployment.yaml names; -tag gives another.
// Files and the image's creation time are dated SOURCE_DATE_EPOCH (default 0), so that the
// same source and Go give the same image digest.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// DefaultTag is the image deploy/deployment.yaml runs.
const DefaultTag = "ghcr.io/starpod/starpod:dev"

// User is the user and group the image runs as: distroless's nonroot, which
// deploy/deployment.yaml's runAsUser and runAsGroup name too.
const User = "65532:65532"

// Options are what build makes.
type Options struct {
	Source string    // the repository's root directory
	Arch   string    // GOARCH of the binary and the image
	Date   time.Time // the date of the files and of the image
}

func main() {
	source := flag.String("source", "../..", "`DIR` of starpod's source (the repository's root)")
	oci := flag.String("oci", "", "`DIR` to write the image into as an OCI image layout")
	tarFile := flag.String("tarball", "", "`FILE` to write the image into as a tarball for docker load")
	tag := flag.String("tag", DefaultTag, "`NAME` of the image, in the layout's index and the tarball")
	arch := flag.String("arch", runtime.GOARCH, "`GOARCH` of the image")
	flag.Parse()
	if *oci == "" && *tarFile == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: image -oci DIR [-tarball FILE] [-tag NAME] [-arch GOARCH] [-source DIR]")
		os.Exit(2)
	}
	date, err := sourceDate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(2)
	}
	img, err := Build(context.Background(), &Options{Source: *source, Arch: *arch, Date: date})
	if err == nil {
		err = Write(img, *tag, *oci, *tarFile)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	d, _ := img.Digest()
	fmt.Printf("%s@%s\n", *tag, d)
}

// sourceDate returns the date of SOURCE_DATE_EPOCH, or the epoch.
func sourceDate() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH: got %q, want seconds since 1970", s)
	}
	return time.Unix(n, 0).UTC(), nil
}

// Build compiles starpod statically and returns its image.
func Build(ctx context.Context, opts *Options) (v1.Image, error) {
	tmp, err := os.MkdirTemp("", "starpod-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "starpod")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", bin, "./cmd/starpod")
	cmd.Dir = opts.Source
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+opts.Arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("building starpod: %w", err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	layerTar, err := rootfs(data, opts.Date)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: opts.Date}, CreatedBy: "scripts/image: CGO_ENABLED=0 go build ./cmd/starpod", Comment: "starpod",
	}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", opts.Arch
	cfg.Created = v1.Time{Time: opts.Date}
	cfg.Config = v1.Config{
		Entrypoint: []string{"/starpod"},
		User:       User,
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.title":  "starpod",
			"org.opencontainers.image.source": "https://github.com/starpod/starpod",
		},
	}
	return mutate.ConfigFile(img, cfg)
}

// rootfs returns the layer's tar: /starpod, executable by all, owned by root.
func rootfs(bin []byte, date time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "starpod", Mode: 0o755, Size: int64(len(bin)),
		ModTime: date, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write writes img, named tag, as an OCI image layout into the directory oci and as a
// tarball into tarFile; an empty one is not written.
func Write(img v1.Image, tag, oci, tarFile string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("-tag: %w", err)
	}
	if oci != "" {
		if _, err := os.Stat(oci); err == nil {
			return fmt.Errorf("%s exists: give a new directory for the layout", oci)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		p, err := layout.Write(oci, empty.Index)
		if err != nil {
			return err
		}
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": ref.String(),
		})); err != nil {
			return err
		}
	}
	if tarFile != "" {
		if err := tarball.WriteToFile(tarFile, ref, img); err != nil {
			return err
		}
	}
	return nil
}
