package bench_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/bench"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/workload"
)

func startForwarder(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	be, err := posix.New(dir, backend.Layout{StripeSize: 16 << 10, StripeCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	d := fwdtest.Start(t, fwd.Options{Backend: be, Sched: sched.Config{Window: 100 * time.Microsecond}})
	return d.Addr(), dir
}

func TestRunPatterns(t *testing.T) {
	addr, dir := startForwarder(t)
	c, err := fwd.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	extra, err := fwd.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	tests := []struct {
		layout workload.Layout
		spat   workload.Spatiality
		op     sched.Op
		size   int64
	}{
		{workload.FilePerProcess, workload.Contiguous, sched.Write, 32 << 10},
		{workload.Shared, workload.Contiguous, sched.Read, 32 << 10},
		{workload.Shared, workload.Strided, sched.Write, 12 << 10},
		{workload.Shared, workload.Strided, sched.Read, 64 << 10},
	}
	for _, tt := range tests {
		p := workload.Pattern{Processes: 6, Layout: tt.layout, Spatiality: tt.spat, Op: tt.op, RequestSize: tt.size, TotalBytes: 6 * 4 * tt.size}
		t.Run(p.String(), func(t *testing.T) {
			res, err := bench.Run(context.Background(), c, p, bench.Options{Dir: "b", Clients: []*fwd.Client{extra}, Keep: true})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Verified || res.Write.Bytes != p.TotalBytes || res.Read.Bytes != p.TotalBytes || res.Write.Requests != 24 {
				t.Fatalf("result %+v", res)
			}
			// The files on the backend hold exactly the pattern's content.
			for i := 0; i < p.Files(); i++ {
				got, err := os.ReadFile(filepath.Join(dir, bench.FileName("b", p, i)))
				if err != nil {
					t.Fatal(err)
				}
				want := make([]byte, len(got))
				bench.Fill(want, 0, i, 0)
				wantLen := p.TotalBytes / int64(p.Files())
				if int64(len(got)) != wantLen || !bytes.Equal(got, want) {
					t.Fatalf("file %d: %d bytes (want %d) or content differs", i, len(got), wantLen)
				}
			}
			var out strings.Builder
			res.Print(&out)
			if !strings.Contains(out.String(), "every byte read back matched") || !strings.Contains(out.String(), "write") {
				t.Fatalf("report:\n%s", out.String())
			}
		})
	}
}

// A read-back that finds other bytes fails with ErrVerify.
func TestVerifyDetectsCorruption(t *testing.T) {
	addr, dir := startForwarder(t)
	c, err := fwd.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := workload.Pattern{Processes: 2, Layout: workload.Shared, Spatiality: workload.Contiguous, Op: sched.Write, RequestSize: 4096, TotalBytes: 8 * 4096}
	if _, err := bench.Run(context.Background(), c, p, bench.Options{Keep: true, NoVerify: true}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "bench/shared.dat"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff, 0xfe}, 5000)
	f.Close()
	if _, err := bench.Verify(context.Background(), c, p, bench.Options{}); !errors.Is(err, bench.ErrVerify) {
		t.Fatalf("verify after corrupting 2 bytes: got %v, want ErrVerify", err)
	}
	p.Processes = 1 // the same bytes, read by one process, from a clean file
	if _, err := bench.Run(context.Background(), c, p, bench.Options{Dir: "clean"}); err != nil {
		t.Fatal(err)
	}
}

func TestFillIsRangeIndependent(t *testing.T) {
	whole := make([]byte, 1000)
	bench.Fill(whole, 5, 2, 13)
	for _, cut := range []int{0, 1, 7, 8, 333, 999} {
		part := make([]byte, 1000-cut)
		bench.Fill(part, 5, 2, 13+int64(cut))
		if !bytes.Equal(part, whole[cut:]) {
			t.Fatalf("Fill from offset %d differs from the same range of a larger fill", 13+cut)
		}
	}
	other := make([]byte, 1000)
	bench.Fill(other, 5, 3, 13)
	if bytes.Equal(other, whole) {
		t.Fatal("different files have the same content")
	}
}

func TestInvalidPattern(t *testing.T) {
	_, err := bench.Run(context.Background(), nil, workload.Pattern{}, bench.Options{})
	if !errors.Is(err, workload.ErrBadPattern) {
		t.Fatalf("got %v, want ErrBadPattern", err)
	}
}

func ExampleSize() {
	fmt.Println(bench.Size(32<<10), bench.Size(4<<30), bench.Size(1000))
	// Output: 32KiB 4GiB 1000B
}
