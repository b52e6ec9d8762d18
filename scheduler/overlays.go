package scheduler

// This file reads and compiles the overlays of an app, confined to its overlay root.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/bound"
)

// path returns the path of a file the spec names: relative paths are relative to app.Dir.
func (app *App) path(file string) string {
	if filepath.IsAbs(file) {
		return file
	}
	return filepath.Join(app.Dir, file)
}

// compile is engine.Compile; tests count its calls.
var compile = engine.Compile

// compileOverlays reads and compiles every overlay file once and returns, for each role, the
// chain of the app's overlays, the role's and opts.Overlays. Its errors come in that order,
// which is the order of the spec file and then of the command line: *SpecError values for
// the files the spec names that cannot be read or are outside the overlay root, the errors
// of reading those of opts (*fs.PathError, *bound.TypeError, *bound.SizeError), *engine.Error
// values for the files that do not compile. Empty and absolute file names, which the spec's
// validation reports, are left out.
func compileOverlays(ctx context.Context, app *App, opts BuildOptions) ([]engine.Chain, []error) {
	compiled := make(map[string]*engine.Overlay)
	var errs []error
	specRoot := opts.OverlayRoot
	if specRoot == "" {
		specRoot = app.Dir
	}
	compileFile := func(file string, p *field.Path, asWritten string) *engine.Overlay {
		file = filepath.Clean(file)
		if o, ok := compiled[file]; ok {
			return o
		}
		compiled[file] = nil
		var src []byte
		var err error
		if p == nil {
			// The command line's own files: any file the user names.
			if src, err = readFile(file, bound.MaxScript, "script"); err != nil {
				errs = append(errs, err)
				return nil
			}
		} else if src, err = readConfined(specRoot, file); err != nil {
			fe := field.Invalid(p, nil, fmt.Sprintf("cannot read overlay: %v", err))
			var out *outsideError
			if errors.As(err, &out) {
				fe = field.Invalid(p, asWritten, out.Error())
			}
			errs = append(errs, &SpecError{File: app.File, Errors: FieldErrors{{Pos: app.position(p), Err: fe}}})
			return nil
		}
		eopts := opts.Engine
		if eopts.Loader == nil {
			root := opts.OverlayRoot
			if root == "" {
				root = filepath.Dir(file)
			}
			eopts.Loader = engine.DirLoader(root)
		}
		o, err := compile(ctx, file, src, &eopts)
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		compiled[file] = o
		return o
	}
	specFile := func(f string, p *field.Path) *engine.Overlay {
		if f == "" || filepath.IsAbs(f) || strings.HasPrefix(f, "/") {
			return nil
		}
		return compileFile(app.path(f), p, f)
	}
	var common engine.Chain
	for i, f := range app.Overlays {
		common = append(common, specFile(f, field.NewPath("overlays").Index(i)))
	}
	roles := make([]engine.Chain, len(app.Roles))
	for ri, r := range app.Roles {
		for i, f := range r.Overlays {
			roles[ri] = append(roles[ri], specFile(f, field.NewPath("roles").Index(ri).Child("overlays").Index(i)))
		}
	}
	var cli engine.Chain
	for _, f := range opts.Overlays {
		cli = append(cli, compileFile(f, nil, f))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	chains := make([]engine.Chain, len(app.Roles))
	for ri := range app.Roles {
		chains[ri] = slices.Concat(common, roles[ri], cli)
	}
	return chains, nil
}

// An outsideError is an overlay file that is not inside the overlay root, by its path or
// by a symbolic link on the way.
type outsideError struct {
	Root string
	Link bool // a symbolic link leads out
}

func (e *outsideError) Error() string {
	if e.Link {
		return "want a file inside the overlay root " + e.Root + ", not a symbolic link that leads out"
	}
	return "want a file inside the overlay root " + e.Root
}

// readConfined reads the file name, which must be inside the directory root, symbolic links
// included, a regular file, and of at most bound.MaxScript bytes. Its errors are an
// *outsideError, an *fs.PathError, a *bound.TypeError or a *bound.SizeError. It never
// blocks on a named pipe.
func readConfined(root, name string) ([]byte, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	absName, err := filepath.Abs(name)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(absRoot, absName)
	if err != nil || !filepath.IsLocal(rel) {
		return nil, &outsideError{Root: root}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// The type comes first: opening a named pipe would wait for a writer.
	fi, err := r.Stat(rel)
	if err != nil {
		return nil, confinedError(err, root, name)
	}
	if !fi.Mode().IsRegular() {
		return nil, &bound.TypeError{Name: name, Mode: fi.Mode(), Want: "a regular file"}
	}
	// And again once open, without waiting, in case the file changed in between.
	f, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, confinedError(err, root, name)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &bound.TypeError{Name: name, Mode: fi.Mode(), Want: "a regular file"}
	}
	return bound.ReadAll(f, name, bound.MaxScript, "script")
}

// confinedError turns an error of os.Root into an *outsideError if the file exists but the
// root refused it, which it does for a symbolic link that leads out, and otherwise into an
// *fs.PathError that names the file as the spec names it.
func confinedError(err error, root, name string) error {
	if !errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(name); serr == nil {
			return &outsideError{Root: root, Link: true}
		}
	}
	var perr *fs.PathError
	if errors.As(err, &perr) {
		return &fs.PathError{Op: "open", Path: name, Err: perr.Err}
	}
	return err
}
