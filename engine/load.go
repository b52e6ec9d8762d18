package engine

// This file defines module loading: the Loader interface, loaders over a directory and an
// fs.FS, and the Linker, which resolves load statements and runs the modules before a script
// runs.

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

	"github.com/starpod/starpod/internal/bound"
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
	name := filepath.Join(l.root, target)
	data, err := readModule(name, func() (fs.File, error) {
		// The type and size come first: opening a named pipe would block.
		fi, err := root.Stat(target)
		if err != nil {
			return nil, err
		}
		if err := bound.Regular(name, fi); err != nil {
			return nil, err
		}
		return root.Open(target)
	})
	if err != nil {
		var perr *fs.PathError
		if errors.As(err, &perr) && strings.Contains(perr.Err.Error(), "escapes") {
			return "", nil, fmt.Errorf("%s leads outside the overlay root %s", module, l.root)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil, fmt.Errorf("%s does not exist", name)
		}
		return "", nil, err
	}
	return name, data, nil
}

// readModule reads the module name from the file open returns, which must be a regular file
// of at most bound.MaxScript bytes.
func readModule(name string, open func() (fs.File, error)) ([]byte, error) {
	f, err := open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := bound.Regular(name, fi); err != nil {
		return nil, err
	}
	if fi.Size() > bound.MaxScript {
		return nil, &bound.SizeError{Name: name, What: "module", Limit: bound.MaxScript}
	}
	return bound.ReadAll(f, name, bound.MaxScript, "module")
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
	data, err := readModule(target, func() (fs.File, error) {
		fi, err := fs.Stat(l.fsys, target)
		if err != nil {
			return nil, err
		}
		if err := bound.Regular(target, fi); err != nil {
			return nil, err
		}
		return l.fsys.Open(target)
	})
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

// A Linker loads the modules that scripts load, before the scripts run. [Linker.Link] resolves
// each load statement of a compiled script through a [Loader], which keeps names inside its
// root; it compiles each module in the overlay dialect, links the module's own loads first, runs
// its top level once and freezes its globals. A module that any file the Linker linked loads
// again is not run again. A load cycle is an error that shows the whole cycle, as in
// "a.star -> b.star -> a.star". [Linker.Load] then serves the load statements of the linked
// files while they run.
//
// [Compile] links the modules of an overlay this way. To compile other Starlark files, such as
// tests, and load their modules, use [NewLinker], compile each file with [Linker.Compile], and
// make Load the Load function of the threads that run them. Link must not be called concurrently; once linking is done, Load may be called
// from many goroutines at once.
type Linker struct {
	loader      Loader
	predeclared starlark.StringDict
	thread      func(module string) (*starlark.Thread, func() *LimitError)
	modules     map[string]starlark.StringDict // frozen globals of each module, by resolved name
	loads       map[loadKey]string             // resolved name of each load statement
	bytes       int64                          // the size of the modules' sources together
}

// LinkOptions configures a [Linker]. The zero value runs modules as [Compile] does with the
// zero [Options].
type LinkOptions struct {
	// Predeclared holds the names that modules see besides the universe. Nil means the helpers
	// that every overlay sees.
	Predeclared starlark.StringDict

	// Thread returns a new thread to run the top level of the module named module; the Linker
	// sets its Load. Nil means a thread bounded by DefaultMaxSteps and DefaultTimeout that
	// discards the output of print().
	Thread func(module string) *starlark.Thread
}

// NewLinker returns a Linker that finds modules with loader. A nil loader makes every load
// statement an error.
func NewLinker(loader Loader, opts *LinkOptions) *Linker {
	if opts == nil {
		opts = &LinkOptions{}
	}
	l := &Linker{loader: loader, predeclared: opts.Predeclared,
		modules: make(map[string]starlark.StringDict), loads: make(map[loadKey]string)}
	if l.predeclared == nil {
		l.predeclared = predeclared
	}
	if newThread := opts.Thread; newThread != nil {
		l.thread = func(module string) (*starlark.Thread, func() *LimitError) {
			return newThread(module), func() *LimitError { return nil }
		}
	} else {
		l.thread = func(module string) (*starlark.Thread, func() *LimitError) {
			return (&Overlay{name: module}).newThread(context.Background())
		}
	}
	return l
}

// Compile parses and resolves src, the Starlark file named name, in the overlay dialect with
// the Linker's predeclared names besides the universe, and links the modules it loads (see
// Link): to compile files other than overlays, such as tests, that see more names. Its errors
// are those of [Compile], an *Error: every resolve error, one a line, and Python habits named
// with what Starlark offers instead.
func (l *Linker) Compile(name string, src []byte) (*starlark.Program, error) {
	if int64(len(src)) > bound.MaxScript {
		return nil, &Error{Overlay: name, Err: &bound.SizeError{Name: name, What: "script", Limit: bound.MaxScript}}
	}
	_, prog, err := compileFile(name, src, l.predeclared)
	if err != nil {
		return nil, &Error{Overlay: name, Err: err}
	}
	if err := l.Link(name, prog); err != nil {
		return nil, err
	}
	return prog, nil
}

// Link loads the modules that prog, the compiled file named name, loads, and the modules those
// load, each once, depth first. Names are resolved by the Linker's Loader relative to the
// loading file. It returns an *Error whose Overlay is name and whose Pos is the load statement
// that failed, with the Starlark backtrace when a module's top level failed.
func (l *Linker) Link(name string, prog *starlark.Program) error {
	return l.link(name, prog, name, []string{name})
}

// link links the loads of prog, the file named name, which loading (the chain of files being
// loaded, from the top file) ends with. Errors name the file top.
func (l *Linker) link(top string, prog *starlark.Program, name string, loading []string) error {
	for i := 0; i < prog.NumLoads(); i++ {
		module, pos := prog.Load(i)
		if l.loader == nil {
			return &Error{Overlay: top, Pos: pos,
				Err: fmt.Errorf("cannot load %s: load is not enabled (no module loader is configured)", module)}
		}
		resolved, src, err := l.loader.Load(name, module)
		if err != nil {
			return &Error{Overlay: top, Pos: pos, Err: fmt.Errorf("cannot load %s: %w", module, err)}
		}
		if _, done := l.modules[resolved]; !done {
			switch {
			case int64(len(src)) > bound.MaxScript:
				err = &bound.SizeError{Name: resolved, What: "module", Limit: bound.MaxScript}
			case l.bytes+int64(len(src)) > bound.MaxModules:
				err = fmt.Errorf("the modules that %s loads are larger than the limit of %s together", top, bound.FormatSize(bound.MaxModules))
			case len(l.modules) >= maxModules:
				err = fmt.Errorf("%s loads more than the limit of %d modules", top, maxModules)
			}
			if err != nil {
				return &Error{Overlay: top, Pos: pos, Err: fmt.Errorf("cannot load %s: %w", module, err)}
			}
		}
		l.loads[loadKey{name, module}] = resolved
		if _, done := l.modules[resolved]; done {
			continue
		}
		l.bytes += int64(len(src))
		for j, f := range loading {
			if f == resolved {
				cycle := append(append([]string{}, loading[j:]...), resolved)
				return &Error{Overlay: top, Pos: pos,
					Err: fmt.Errorf("load cycle: %s", strings.Join(cycle, " -> "))}
			}
		}
		_, mprog, err := compileFile(resolved, src, l.predeclared)
		if err != nil {
			return &Error{Overlay: top, Err: err}
		}
		if err := l.link(top, mprog, resolved, append(loading, resolved)); err != nil {
			return err
		}

		thread, stop := l.thread(resolved)
		thread.Load = l.Load
		globals, err := mprog.Init(thread, l.predeclared)
		if lim := stop(); err != nil {
			return (&Overlay{name: top}).evalError(err, thread, lim)
		}
		globals.Freeze()
		l.modules[resolved] = globals
	}
	return nil
}

// Load returns the globals of module as the load statement running in thread names it. The
// Linker must have linked the file that holds the statement. Load has the signature of
// starlark.Thread's Load field.
func (l *Linker) Load(thread *starlark.Thread, module string) (starlark.StringDict, error) {
	from := thread.CallFrame(0).Pos.Filename()
	if g, ok := l.modules[l.loads[loadKey{from, module}]]; ok {
		return g, nil
	}
	return nil, fmt.Errorf("cannot load %s: it was not loaded when %s was linked", module, from)
}
