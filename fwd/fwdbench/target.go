package fwdbench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/rw"
)

// target is where a run's files live: behind the forwarder or in a local
// directory. Its methods are called by the run and phase logic only.
type target interface {
	// prepare makes dir ready to hold the files.
	prepare(dir string) error
	// create creates file name, or truncates it to zero bytes.
	create(name string) error
	// open opens file name for process proc of procs, for the phase's
	// operation op, with a request buffer of n bytes; it is called from the
	// process's goroutine.
	open(proc, procs int, name string, n int, op rw.Op) (handle, error)
	// remove unlinks file name.
	remove(name string) error
}

// handle is one process's open file and its request buffer, used by that
// process's goroutine alone.
type handle interface {
	// buf is the request buffer, allocated once by open.
	buf() []byte
	// writeAt writes all of buf at off.
	writeAt(off int64) (int, error)
	// readAt fills buf from off.
	readAt(off int64) (int, error)
	// close releases the buffer and the file.
	close()
}

// ClientOf is the connection (the I/O node, in the demo) of process proc
// of procs spread over clients in blocks: processes 0 to procs/clients-1 on
// the first, and so on, as MPI places consecutive ranks on one compute node
// and the simulator maps compute nodes to I/O nodes (package sim). With
// round robin instead, each I/O node's processes of a strided pattern hold
// every clients-th block, and no two of its requests ever continue each
// other on a data server: nothing could be aggregated.
func ClientOf(proc, procs, clients int) int {
	if procs <= 0 || proc < 0 || proc >= procs {
		return 0
	}
	return proc * clients / procs
}

var (
	_ target = forwarder(nil)
	_ target = direct{}
	_ handle = (*fwdHandle)(nil)
	_ handle = (*osHandle)(nil)
)

// forwarder is the daemon's target: the clients, processes spread over them
// in blocks (ClientOf).
type forwarder []*client.Client

func (t forwarder) prepare(dir string) error {
	if err := t[0].Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

func (t forwarder) create(name string) error {
	f, err := t[0].OpenFile(name, fwdproto.OpenCreate|fwdproto.OpenTruncate, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

func (t forwarder) open(proc, procs int, name string, n int, _ rw.Op) (handle, error) {
	c := t[ClientOf(proc, procs, len(t))]
	f, err := c.Open(name)
	if err != nil {
		return nil, err
	}
	f.Process = uint32(proc)
	// The request buffer comes from the client: in its shared region on a
	// node-local connection, so data moves between it and the backend with
	// no copy in the client.
	b, err := c.AllocBuffer(n)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &fwdHandle{f: f, b: b}, nil
}

func (t forwarder) remove(name string) error { return t[0].Unlink(name) }

type fwdHandle struct {
	f *client.File
	b *client.Buffer
}

func (h *fwdHandle) buf() []byte                    { return h.b.Bytes() }
func (h *fwdHandle) writeAt(off int64) (int, error) { return h.f.WriteBuffer(h.b, off) }
func (h *fwdHandle) readAt(off int64) (int, error)  { return h.f.ReadBuffer(h.b, off) }
func (h *fwdHandle) close()                         { h.b.Free(); h.f.Close() }

// direct is the local target: files in a directory of this machine, moved
// with os.File's WriteAt and ReadAt (pwrite, pread), no forwarder.
type direct struct{}

func (direct) prepare(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("direct directory %s does not exist (create it first): %w", dir, err)
	}
	if err != nil {
		return fmt.Errorf("direct directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("direct directory %s: %w", dir, ErrNotDir)
	}
	return nil
}

func (direct) create(name string) error {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// open opens the file write-only for a write phase and read-only for a read
// phase, as IOR and MPI-IO applications do (a mount may treat the two
// differently: adaptio mount reads through the page cache only on files open
// read-only).
func (direct) open(_, _ int, name string, n int, op rw.Op) (handle, error) {
	flag := os.O_WRONLY
	if op == rw.Read {
		flag = os.O_RDONLY
	}
	f, err := os.OpenFile(name, flag, 0)
	if err != nil {
		return nil, err
	}
	return &osHandle{f: f, b: make([]byte, n)}, nil
}

func (direct) remove(name string) error { return os.Remove(name) }

type osHandle struct {
	f *os.File
	b []byte
}

func (h *osHandle) buf() []byte                    { return h.b }
func (h *osHandle) writeAt(off int64) (int, error) { return h.f.WriteAt(h.b, off) }
func (h *osHandle) readAt(off int64) (int, error)  { return h.f.ReadAt(h.b, off) }
func (h *osHandle) close()                         { h.f.Close() }
