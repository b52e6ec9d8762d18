package engine

// This file defines module loading: the Loader interface, loaders over a directory and an
// fs.FS, and the resolution of load statements at compile time.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"go.starlark.net/starlark"
)

// A Loader finds the modules that load statements name.
//
// Load resolves module, as written in a load statement of the file named from (the overlay's
// own name, or a name Load returned before), and returns the resolved module's name, which
// identifies it and appears in positions, and its source. Load must refuse names that escape
// the loader's root.
type Loader interface {
	Load(from, module string) (name string, src []byte, err error)
}

// DirLoader returns a Loader that reads modules from the directory root on the local file
// system. Module names are relative to the directory of the loading file; absolute names,
// names that climb out of root with "..", and symbolic links that lead out of root are refused.
// The names it returns are root joined with the module's path inside root.
func DirLoader(root string) Loader { return dirLoader{root: filepath.Clean(root)} }

type dirLoader struct{ root string }

func (l dirLoader) Load(from, module string) (string, []byte, error) {
	if filepath.IsAbs(module) || strings.HasPrefix(module, "/") {
		return "", nil, fmt.Errorf("absolute module paths are not allowed; name a file relative to the loading file inside %s", l.root)
	}
	absRoot, err := filepath.Abs(l.root)
	if err != nil {
		return "", nil, err
	}
	absFrom, err := filepath.Abs(from)
	if err != nil {
		return "", nil, err
	}
	dir, err := filepath.Rel(absRoot, filepath.Dir(absFrom))
	if err != nil || !filepath.IsLocal(dir) && dir != "." {
		return "", nil, fmt.Errorf("%s is outside the overlay root %s", from, l.root)
	}
	target := filepath.Join(dir, filepath.FromSlash(module))
	if !filepath.IsLocal(target) {
		return "", nil, fmt.Errorf("%s is outside the overlay root %s", module, l.root)
	}
	root, err := os.OpenRoot(l.root)
	if err != nil {
		return "", nil, err
	}
	defer root.Close()
	data, err := root.ReadFile(target)
	if err != nil {
		var perr *fs.PathError
		if errors.As(err, &perr) && strings.Contains(perr.Err.Error(), "escapes") {
			return "", nil, fmt.Errorf("%s leads outside the overlay root %s", module, l.root)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil, fmt.Errorf("%s does not exist", filepath.Join(l.root, target))
		}
		return "", nil, err
	}
	return filepath.Join(l.root, target), data, nil
}

// FSLoader returns a Loader that reads modules from fsys. The overlay's name and the module
// names are slash-separated paths in fsys; module names are relative to the directory of the
// loading file and may not leave fsys.
func FSLoader(fsys fs.FS) Loader { return fsLoader{fsys} }

type fsLoader struct{ fsys fs.FS }

func (l fsLoader) Load(from, module string) (string, []byte, error) {
	if strings.HasPrefix(module, "/") {
		return "", nil, errors.New("absolute module paths are not allowed; name a file relative to the loading file")
	}
	target := path.Join(path.Dir(from), module)
	if !fs.ValidPath(target) {
		return "", nil, fmt.Errorf("%s is outside the module file system", module)
	}
	data, err := fs.ReadFile(l.fsys, target)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil, fmt.Errorf("%s does not exist", target)
		}
		return "", nil, err
	}
	return target, data, nil
}

// loadKey identifies one load statement's target: the module as written, in the file from.
type loadKey struct{ from, module string }

// linker loads, at compile time, every module an overlay loads, depth first, each once.
type linker struct {
	overlay *Overlay
	loading []string // the chain of files being loaded, for cycle reports
}

// loadAll loads the modules that prog, the file named name, loads.
func (l *linker) loadAll(prog *starlark.Program, name string) error {
	o := l.overlay
	for i := 0; i < prog.NumLoads(); i++ {
		module, pos := prog.Load(i)
		if o.opts.Loader == nil {
			return &Error{Overlay: o.name, Pos: pos,
				Err: fmt.Errorf("cannot load %s: load is not enabled (no module loader is configured)", module)}
		}
		resolved, src, err := o.opts.Loader.Load(name, module)
		if err != nil {
			return &Error{Overlay: o.name, Pos: pos, Err: fmt.Errorf("cannot load %s: %w", module, err)}
		}
		o.loads[loadKey{name, module}] = resolved
		if _, done := o.modules[resolved]; done {
			continue
		}
		for j, f := range l.loading {
			if f == resolved {
				cycle := append(append([]string{}, l.loading[j:]...), resolved)
				return &Error{Overlay: o.name, Pos: pos,
					Err: fmt.Errorf("load cycle: %s", strings.Join(cycle, " -> "))}
			}
		}
		mprog, err := compileProgram(resolved, src)
		if err != nil {
			return &Error{Overlay: o.name, Err: err}
		}
		l.loading = append(l.loading, resolved)
		if err := l.loadAll(mprog, resolved); err != nil {
			return err
		}
		l.loading = l.loading[:len(l.loading)-1]

		thread, stop := o.newThread(context.Background())
		globals, err := mprog.Init(thread, predeclared)
		if lim := stop(); err != nil {
			return o.evalError(err, thread, lim)
		}
		globals.Freeze()
		o.modules[resolved] = globals
	}
	return nil
}
