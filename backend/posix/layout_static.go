package posix

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/rootfs"
	"github.com/adaptio/adaptio/layout"
)

// static is the layout kind of a file system whose layout adaptio cannot
// read: one layout.Layout round robin (Env.Static), overridden per
// directory by layout.File files, the file's first server by a hash
// of its name (layout.Layout.FirstServer). Each directory's layout is
// read once and cached.
type static struct {
	fs      *rootfs.FS
	def     layout.Layout
	servers int

	mu      sync.RWMutex
	layouts map[string]layoutEntry // directory -> layout in force there
}

type layoutEntry struct {
	l   layout.Layout
	err error
}

var _ Layouts = (*static)(nil)

func newStatic(env Env) (Layouts, error) {
	def := env.Static
	if def == (layout.Layout{}) {
		def = layout.Default(4)
	}
	servers := def.StripeCount
	if env.Servers > 0 {
		servers = env.Servers
	}
	if err := def.Validate(servers); err != nil {
		return nil, err
	}
	return &static{fs: env.FS, def: def, servers: servers, layouts: make(map[string]layoutEntry)}, nil
}

func (s *static) Servers() int { return s.servers }

// layout is the layout in force in the clean directory dir.
func (s *static) layout(dir string) (layout.Layout, error) {
	s.mu.RLock()
	e, ok := s.layouts[dir]
	s.mu.RUnlock()
	if ok {
		return e.l, e.err
	}
	data, err := s.fs.ReadFile(path.Join(dir, layout.File))
	switch {
	case err == nil:
		e.l, e.err = layout.Parse(data, s.def)
		if e.err == nil {
			e.err = e.l.Validate(s.servers)
		}
		if e.err != nil {
			e.err = fmt.Errorf("posix: %s: %w", path.Join(dir, layout.File), e.err)
		}
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, backend.ErrBadArgument) || isNotDir(err):
		if dir == "." {
			e.l = s.def
		} else {
			e.l, e.err = s.layout(path.Dir(dir))
		}
	default:
		return layout.Layout{}, err // transient: do not cache
	}
	s.mu.Lock()
	s.layouts[dir] = e
	s.mu.Unlock()
	return e.l, e.err
}

func isNotDir(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "not a directory"
}

// fileLayout resolves the layout of file name and the server of its
// stripe 0.
func (s *static) fileLayout(name string) (layout.Layout, int, error) {
	l, err := s.layout(path.Dir(name))
	if err != nil {
		return l, 0, err
	}
	return l, l.FirstServer(name, s.servers), nil
}

func (s *static) Split(dst []layout.Piece, name string, off, n int64) ([]layout.Piece, error) {
	l, first, err := s.fileLayout(name)
	if err != nil {
		return dst, err
	}
	return l.Split(dst, s.servers, first, off, n), nil
}

func (s *static) Check(name string, server int, off, n int64) error {
	l, first, err := s.fileLayout(name)
	if err != nil {
		return err
	}
	return l.Check(l.Slot(server, first, s.servers), off, n)
}

// Opened does nothing: a static layout depends on names, not on files.
func (s *static) Opened(string, backend.FileInfo) {}

func (s *static) Forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name == "" || name == "." {
		clear(s.layouts)
		return
	}
	for dir := range s.layouts {
		if dir == name || strings.HasPrefix(dir, name+"/") {
			delete(s.layouts, dir)
		}
	}
}

// set writes a LayoutFile in the clean directory dir.
func (s *static) set(dir string, l layout.Layout) error {
	if err := l.Validate(s.servers); err != nil {
		return fmt.Errorf("posix: %w", err)
	}
	data, _ := l.MarshalText()
	if err := s.fs.WriteFile(path.Join(dir, layout.File), data, 0o644); err != nil {
		return fmt.Errorf("posix: set layout: %w", err)
	}
	s.Forget("")
	return nil
}
