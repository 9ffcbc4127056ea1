package fwdbench_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdbench"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/workload"
)

func startForwarder(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	be, err := posix.New(dir, layout.Layout{StripeSize: 16 << 10, StripeCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	d := fwdtest.Start(t, fwd.Options{Backend: be, Sched: sched.Config{Window: 100 * time.Microsecond}})
	return d.Addr(), dir
}

// dial connects to the forwarder at addr; the client is closed when the
// test ends.
func dial(t *testing.T, addr string) *client.Client {
	t.Helper()
	c, err := client.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Every pattern shape, through the forwarder and directly, writes exactly
// Fill's bytes and reads them back verified.
func TestRunPatterns(t *testing.T) {
	addr, backendDir := startForwarder(t)
	c, extra := dial(t, addr), dial(t, addr)
	ctx := context.Background()
	targets := []struct {
		name string
		// run runs p keeping its files and returns the local directory
		// holding them.
		run func(t *testing.T, p workload.Pattern, o fwdbench.Options) (fwdbench.Result, string, error)
	}{
		{"forwarder", func(t *testing.T, p workload.Pattern, o fwdbench.Options) (fwdbench.Result, string, error) {
			o.Dir, o.Clients = "b", []*client.Client{extra}
			res, err := fwdbench.Run(ctx, c, p, o)
			return res, filepath.Join(backendDir, "b"), err
		}},
		{"direct", func(t *testing.T, p workload.Pattern, o fwdbench.Options) (fwdbench.Result, string, error) {
			dir := t.TempDir()
			// A stale, longer file is truncated as on the forwarder.
			if err := os.WriteFile(fwdbench.FileName(dir, p, 0), make([]byte, 2*p.TotalBytes), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := fwdbench.RunDirect(ctx, dir, p, o)
			return res, dir, err
		}},
	}
	tests := []struct {
		layout workload.Layout
		spat   workload.Spatiality
		op     rw.Op
		size   int64
	}{
		{workload.FilePerProcess, workload.Contiguous, rw.Write, 32 << 10},
		{workload.FilePerProcess, workload.Strided, rw.Read, 12 << 10},
		{workload.Shared, workload.Contiguous, rw.Read, 32 << 10},
		{workload.Shared, workload.Strided, rw.Write, 12 << 10},
		{workload.Shared, workload.Strided, rw.Read, 64 << 10},
	}
	for _, tg := range targets {
		for _, tt := range tests {
			p := workload.Pattern{Processes: 6, Layout: tt.layout, Spatiality: tt.spat, Op: tt.op, RequestSize: tt.size, TotalBytes: 6 * 4 * tt.size}
			t.Run(tg.name+"/"+p.String(), func(t *testing.T) {
				res, dir, err := tg.run(t, p, fwdbench.Options{Keep: true, Seed: 7})
				if err != nil {
					t.Fatal(err)
				}
				if !res.Verified || res.Write.Bytes != p.TotalBytes || res.Read.Bytes != p.TotalBytes || res.Write.Requests != 24 || res.Read.Requests != 24 {
					t.Fatalf("result %+v", res)
				}
				if res.Write.Bandwidth <= 0 || res.Read.Bandwidth <= 0 || res.Measured().Op != tt.op {
					t.Fatalf("phases %+v %+v", res.Write, res.Read)
				}
				checkFiles(t, dir, p, 7)
				var out strings.Builder
				res.Print(&out)
				if !strings.Contains(out.String(), "every byte read back matched") || !strings.Contains(out.String(), "write") {
					t.Fatalf("report:\n%s", out.String())
				}
			})
		}
	}
}

// checkFiles fails unless the pattern's files under dir hold exactly the
// bytes its requests wrote (Fill's content; zeros in the holes a
// file-per-process strided pattern leaves).
func checkFiles(t *testing.T, dir string, p workload.Pattern, seed uint64) {
	t.Helper()
	want := make([][]byte, p.Files())
	for proc := 0; proc < p.Processes; proc++ {
		for i := 0; i < p.RequestsPerProcess(); i++ {
			file, off := p.Request(proc, i)
			if end := off + p.RequestSize; int64(len(want[file])) < end {
				want[file] = append(want[file], make([]byte, end-int64(len(want[file])))...)
			}
			fwdbench.Fill(want[file][off:off+p.RequestSize], seed, file, off)
		}
	}
	for i := range want {
		got, err := os.ReadFile(fwdbench.FileName(dir, p, i))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[i]) {
			t.Fatalf("file %d: %d bytes (want %d) or content differs", i, len(got), len(want[i]))
		}
	}
}

// A read-back that finds other bytes fails with ErrVerify.
func TestVerifyDetectsCorruption(t *testing.T) {
	addr, dir := startForwarder(t)
	c := dial(t, addr)
	p := workload.Pattern{Processes: 2, Layout: workload.Shared, Spatiality: workload.Contiguous, Op: rw.Write, RequestSize: 4096, TotalBytes: 8 * 4096}
	if _, err := fwdbench.Run(context.Background(), c, p, fwdbench.Options{Keep: true, NoVerify: true}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "bench/shared.dat"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff, 0xfe}, 5000)
	f.Close()
	if _, err := fwdbench.Verify(context.Background(), c, p, fwdbench.Options{}); !errors.Is(err, fwdbench.ErrVerify) {
		t.Fatalf("verify after corrupting 2 bytes: got %v, want ErrVerify", err)
	}
	p.Processes = 1 // the same bytes, read by one process, from a clean file
	if _, err := fwdbench.Run(context.Background(), c, p, fwdbench.Options{Dir: "clean"}); err != nil {
		t.Fatal(err)
	}
}

func TestFillIsRangeIndependent(t *testing.T) {
	whole := make([]byte, 1000)
	fwdbench.Fill(whole, 5, 2, 13)
	for _, cut := range []int{0, 1, 7, 8, 333, 999} {
		part := make([]byte, 1000-cut)
		fwdbench.Fill(part, 5, 2, 13+int64(cut))
		if !bytes.Equal(part, whole[cut:]) {
			t.Fatalf("Fill from offset %d differs from the same range of a larger fill", 13+cut)
		}
	}
	other := make([]byte, 1000)
	fwdbench.Fill(other, 5, 3, 13)
	if bytes.Equal(other, whole) {
		t.Fatal("different files have the same content")
	}
}

func TestInvalidPattern(t *testing.T) {
	_, err := fwdbench.Run(context.Background(), nil, workload.Pattern{}, fwdbench.Options{})
	if !errors.Is(err, workload.ErrBadPattern) {
		t.Fatalf("got %v, want ErrBadPattern", err)
	}
}

func ExampleSize() {
	fmt.Println(fwdbench.Size(32<<10), fwdbench.Size(4<<30), fwdbench.Size(1000))
	// Output: 32KiB 4GiB 1000B
}

// Processes are spread over the connections in blocks of consecutive
// ranks, as MPI places ranks on nodes and the simulator maps them to I/O
// nodes: with two forwarders and 8 processes of a 1D-strided pattern, the
// first forwarder sees the blocks of ranks 0 to 3 only.
func TestProcessesSpreadInBlocks(t *testing.T) {
	dir := t.TempDir()
	be, err := posix.New(dir, layout.Layout{StripeSize: 16 << 10, StripeCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	const procs, size = 8, 4 << 10
	var mu sync.Mutex
	ranks := [2]map[int64]bool{{}, {}}
	var conns []*client.Client
	for i := range 2 {
		d := fwdtest.Start(t, fwd.Options{Backend: be, Scheduler: "fifo", OnRequest: func(_ uint64, off, _ int64, _ rw.Op) {
			mu.Lock()
			ranks[i][off/size%procs] = true
			mu.Unlock()
		}})
		conns = append(conns, dial(t, d.Addr()))
	}
	p := workload.Pattern{Processes: procs, Layout: workload.Shared, Spatiality: workload.Strided, Op: rw.Write, RequestSize: size, TotalBytes: procs * 4 * size}
	if _, err := fwdbench.Run(context.Background(), conns[0], p, fwdbench.Options{Clients: conns[1:], NoVerify: true}); err != nil {
		t.Fatal(err)
	}
	for i, want := range [2][]int64{{0, 1, 2, 3}, {4, 5, 6, 7}} {
		if len(ranks[i]) != len(want) {
			t.Errorf("forwarder %d served the blocks of ranks %v, want %v", i, ranks[i], want)
			continue
		}
		for _, r := range want {
			if !ranks[i][r] {
				t.Errorf("forwarder %d served the blocks of ranks %v, want %v", i, ranks[i], want)
				break
			}
		}
	}
}

// ReadPasses reads every process's requests again through its one handle:
// twice the bytes and requests, each checked, the write phase unchanged;
// and a corruption is found in any pass.
func TestReadPasses(t *testing.T) {
	addr, dir := startForwarder(t)
	c := dial(t, addr)
	p := workload.Pattern{Processes: 4, Layout: workload.Shared, Spatiality: workload.Strided, Op: rw.Write, RequestSize: 4096, TotalBytes: 32 * 4096}
	res, err := fwdbench.Run(context.Background(), c, p, fwdbench.Options{Keep: true, ReadPasses: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Write.Bytes != p.TotalBytes || res.Write.Requests != 32 {
		t.Errorf("write phase %d bytes, %d requests; want %d, 32 (passes are the read phase's)", res.Write.Bytes, res.Write.Requests, p.TotalBytes)
	}
	if res.Read.Bytes != 3*p.TotalBytes || res.Read.Requests != 96 || !res.Verified {
		t.Errorf("read phase %d bytes, %d requests, verified %v; want %d, 96, true", res.Read.Bytes, res.Read.Requests, res.Verified, 3*p.TotalBytes)
	}
	ph, err := fwdbench.Verify(context.Background(), c, p, fwdbench.Options{ReadPasses: 2})
	if err != nil || ph.Bytes != 2*p.TotalBytes || len(ph.ProcessEnds) != p.Processes {
		t.Fatalf("verify, 2 passes: %d bytes, %d process ends, %v; want %d, %d", ph.Bytes, len(ph.ProcessEnds), err, 2*p.TotalBytes, p.Processes)
	}
	f, err := os.OpenFile(filepath.Join(dir, "bench/shared.dat"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff}, 4096*31+7)
	f.Close()
	if _, err := fwdbench.Verify(context.Background(), c, p, fwdbench.Options{ReadPasses: 2}); !errors.Is(err, fwdbench.ErrVerify) {
		t.Fatalf("verify after corrupting a byte: got %v, want ErrVerify", err)
	}
}
