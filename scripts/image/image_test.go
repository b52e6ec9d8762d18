package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImage builds the image, writes it as an OCI layout and a tarball, and reads it back: its
// entrypoint is a static /starpod that runs as the non-root user deploy/ names, and deploy/
// runs the image this builds.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds starpod")
	}
	img, err := Build(context.Background(), &Options{Source: "../..", Arch: runtime.GOARCH, Date: time.Unix(0, 0).UTC()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	oci, tarFile := filepath.Join(dir, "oci"), filepath.Join(dir, "starpod.tar")
	if err := Write(img, DefaultTag, oci, tarFile); err != nil {
		t.Fatal(err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}

	// The layout holds the image, named.
	p, err := layout.FromPath(oci)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != want || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != DefaultTag {
		t.Fatalf("layout index %+v, want the one image %s named %s", m.Manifests, want, DefaultTag)
	}
	got, err := idx.Image(want)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := got.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/starpod"}) || cfg.Config.User != User || cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("config: entrypoint %q, user %q, platform %s/%s; want [/starpod], %s, linux/%s",
			cfg.Config.Entrypoint, cfg.Config.User, cfg.OS, cfg.Architecture, User, runtime.GOARCH)
	}

	// One layer: /starpod alone, executable, a static binary.
	layers, err := got.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d (%v), want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	var bin []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == "starpod" {
			if h.Mode != 0o755 || h.Uid != 0 {
				t.Errorf("starpod: mode %o, uid %d; want 755 and root's", h.Mode, h.Uid)
			}
			if bin, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !slices.Equal(names, []string{"starpod"}) {
		t.Fatalf("layer files %q, want starpod alone", names)
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatal(err)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("/starpod asks for a dynamic loader: it is not static")
		}
	}

	// The tarball holds the same image under its tag.
	tag, _ := name.NewTag(DefaultTag)
	fromTar, err := tarball.ImageFromPath(tarFile, &tag)
	if err != nil {
		t.Fatal(err)
	}
	// (Its manifest is docker load's, rebuilt: the configs are the same.)
	wantConfig, _ := img.ConfigName()
	if d, err := fromTar.ConfigName(); err != nil || d != wantConfig {
		t.Errorf("tarball image's config %s (%v), want %s", d, err, wantConfig)
	}

	// deploy/ runs this image, as its user, on a read-only root file system.
	dep, err := os.ReadFile("../../deploy/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`(?m)^\s+image: ` + regexp.QuoteMeta(DefaultTag) + `(\s+#.*)?$`,
		`(?m)^\s+runAsUser: 65532$`, `(?m)^\s+runAsGroup: 65532$`, `readOnlyRootFilesystem: true`,
	} {
		if !regexp.MustCompile(re).Match(dep) {
			t.Errorf("deploy/deployment.yaml does not match %s", re)
		}
	}
}
