package fwdbench

import (
	"context"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/sys/unix"

	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// slowOpenClose is the direct target whose opens and closes each take a
// second of the bubble's clock (synctest), and whose transfers take none.
type slowOpenClose struct{ direct }

func (t slowOpenClose) open(proc, procs int, name string, n int, op rw.Op) (handle, error) {
	time.Sleep(time.Second)
	h, err := t.direct.open(proc, procs, name, n, op)
	if err != nil {
		return nil, err
	}
	return slowClose{h}, nil
}

type slowClose struct{ handle }

func (h slowClose) close() { time.Sleep(time.Second); h.handle.close() }

// With TransfersOnly the makespan holds the transfers alone and the closes
// are reported apart; by default a phase runs from the first open to the
// last close. Read-back still checks every byte.
func TestTransfersOnlyLeavesOpenAndCloseOut(t *testing.T) {
	p := workload.Pattern{Processes: 4, Layout: workload.Shared, Spatiality: workload.Strided, Op: rw.Write, RequestSize: 4096, TotalBytes: 4 * 8 * 4096}
	for _, tt := range []struct {
		name           string
		only           bool
		makespan, shut time.Duration
	}{
		{"transfers only", true, 0, time.Second},
		{"open to close", false, 2 * time.Second, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			synctest.Test(t, func(t *testing.T) {
				res, err := run(context.Background(), slowOpenClose{}, dir, p, Options{TransfersOnly: tt.only})
				if err != nil {
					t.Fatal(err)
				}
				if !res.Verified {
					t.Error("read-back not verified")
				}
				for _, ph := range []Phase{res.Write, res.Read} {
					if ph.Makespan != tt.makespan || ph.Close != tt.shut {
						t.Errorf("%s: makespan %v, close %v; want %v and %v", ph.Op, ph.Makespan, ph.Close, tt.makespan, tt.shut)
					}
					for proc, end := range ph.ProcessEnds {
						if end > ph.Makespan {
							t.Errorf("%s: process %d ended at %v, after the makespan %v", ph.Op, proc, end, ph.Makespan)
						}
					}
				}
			})
		})
	}
}

// A direct run opens its files write-only to write and read-only to read,
// as IOR does.
func TestDirectOpensForTheOperation(t *testing.T) {
	name := t.TempDir() + "/f"
	if err := os.WriteFile(name, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		op   rw.Op
		want int
	}{{rw.Write, os.O_WRONLY}, {rw.Read, os.O_RDONLY}} {
		h, err := direct{}.open(0, 1, name, 4096, tt.op)
		if err != nil {
			t.Fatal(err)
		}
		f := h.(*osHandle).f
		got, err := fcntlFlags(f)
		h.close()
		if err != nil {
			t.Fatal(err)
		}
		if got&(os.O_WRONLY|os.O_RDWR|os.O_RDONLY) != tt.want {
			t.Errorf("%s: opened with access mode %#o, want %#o", tt.op, got&3, tt.want)
		}
	}
}

// fcntlFlags is F_GETFL of f.
func fcntlFlags(f *os.File) (int, error) {
	raw, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var fl int
	var ferr error
	err = raw.Control(func(fd uintptr) { fl, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0) })
	if err != nil {
		return 0, err
	}
	return fl, ferr
}
