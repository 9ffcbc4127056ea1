package moosefs_test

import (
	"context"
	"path/filepath"
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

// chunkSize is MooseFS's chunk: 64 MiB, each of 64 KiB blocks.
const chunkSize = 64 << 20

// The real forwarder over a real MooseFS mount with the moosefs layout
// kind: a shared file written by 4 processes in strided 32 KiB requests
// through TWINS, every byte read back through the forwarder and again
// directly from the mount; the file's chunks each on exactly one chunk
// server (goal 1), and the kind's queue for each chunk that server's
// index among the cluster's servers in address order.
func TestForwarderOverMooseFS(t *testing.T) {
	c := startCluster(t)
	if kind, why := posix.Detect(c.mnt); kind != posix.LayoutMooseFS {
		t.Errorf("Detect(%s) = %q (%s), want %q", c.mnt, kind, why, posix.LayoutMooseFS)
	}
	be, err := posix.Open(posix.Options{Root: c.mnt, Layout: posix.LayoutAuto, MooseFS: posix.MooseFSOptions{Exec: c.exec}})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	if be.LayoutKind() != posix.LayoutMooseFS {
		t.Fatalf("--layout auto on the mount chose %q, want %q", be.LayoutKind(), posix.LayoutMooseFS)
	}
	if be.Servers() != len(c.chunks) {
		t.Fatalf("the moosefs kind sees %d servers, the cluster has %d", be.Servers(), len(c.chunks))
	}
	d := fwdtest.Start(t, fwd.Options{Backend: be, Scheduler: "twins"})
	cl, err := client.Dial(d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	// 160 MiB: two whole chunks and part of a third.
	p := workload.Pattern{Processes: 4, Layout: workload.Shared, Spatiality: workload.Strided,
		Op: rw.Write, RequestSize: 32 << 10, TotalBytes: 160 << 20}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := fwdbench.Options{Dir: "bench", Keep: true, Seed: 7}
	res, err := fwdbench.Run(ctx, cl, p, o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verified || res.Write.Bytes != p.TotalBytes || res.Read.Bytes != p.TotalBytes {
		t.Fatalf("forwarded run: verified %v, wrote %d, read %d bytes; want verified, %d each", res.Verified, res.Write.Bytes, res.Read.Bytes, p.TotalBytes)
	}
	t.Logf("through the forwarder: write %.0f MiB/s, read %.0f MiB/s", res.Write.Bandwidth/(1<<20), res.Read.Bandwidth/(1<<20))
	// The same bytes, read from the MooseFS mount without the forwarder.
	ph, err := fwdbench.VerifyDirect(ctx, filepath.Join(c.mnt, o.Dir), p, o)
	if err != nil {
		t.Fatalf("reading the forwarder's file from the mount: %v", err)
	}
	if ph.Bytes != p.TotalBytes {
		t.Fatalf("direct read-back: %d bytes, want %d", ph.Bytes, p.TotalBytes)
	}

	name := fwdbench.FileName(filepath.Join(c.mnt, o.Dir), p, 0)
	info := c.tool(t, "mfsfileinfo", name)
	files, err := posix.ParseMooseFSFileInfo(info)
	if err != nil || len(files) != 1 {
		t.Fatalf("mfsfileinfo output %q: %v", info, err)
	}
	fi := files[0]
	if want := int((p.TotalBytes + chunkSize - 1) / chunkSize); len(fi.Chunks) != want {
		t.Fatalf("mfsfileinfo lists %d chunks, want %d:\n%s", len(fi.Chunks), want, info)
	}
	index := map[string]int{} // the script lists the servers in address order
	for i, a := range c.chunks {
		index[a] = i
	}
	rel, _ := filepath.Rel(c.mnt, name)
	for _, ch := range fi.Chunks {
		i, ok := index[ch.Copies[0].Addr]
		if len(ch.Copies) != 1 || !ok {
			t.Errorf("chunk %d: copies %+v, want one on a chunk server of %v", ch.Index, ch.Copies, c.chunks)
			continue
		}
		// The kind reads chunk lists in the background: the split that
		// finds its list stale starts a read and is answered from the
		// list in force, so ask until the read is in (a deadline, no sleep
		// to tune).
		off := int64(ch.Index) * chunkSize
		var pieces []layout.Piece
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			pieces, err = be.Split(nil, rel, off, min(chunkSize, p.TotalBytes-off))
			if err != nil || (len(pieces) == 1 && pieces[0].Server == i) || time.Now().After(deadline) {
				break
			}
		}
		if err != nil || len(pieces) != 1 || pieces[0].Server != i {
			t.Errorf("chunk %d on %s (server %d): the layout gives %v, %v", ch.Index, ch.Copies[0].Addr, i, pieces, err)
		}
	}
	t.Logf("mfsfileinfo:\n%s", info)
}

// BenchmarkLayouts runs 4 processes' shared strided 32 KiB writes and the
// read-back (256 MiB) through TWINS (1 ms, as "adaptio forward" sets it up
// for one I/O node: skip-empty and idle-start on) over the MooseFS mount,
// the queues chosen by the static layout (64 MiB stripes round robin over
// 4 queues) and by the moosefs kind (each chunk's real server), the two
// alternating b.N rounds. Reports the MiB/s of each phase per kind.
//
//	go test ./e2e/moosefs -run XXX -bench Layouts -benchtime 3x
func BenchmarkLayouts(b *testing.B) {
	c := startCluster(b)
	p := workload.Pattern{Processes: 4, Layout: workload.Shared, Spatiality: workload.Strided,
		Op: rw.Write, RequestSize: 32 << 10, TotalBytes: 256 << 20}
	kinds := []string{posix.LayoutStatic, posix.LayoutMooseFS}
	clients := map[string]*client.Client{}
	for _, kind := range kinds {
		be, err := posix.Open(posix.Options{Root: c.mnt, Layout: kind, Static: layout.Layout{StripeSize: chunkSize, StripeCount: len(c.chunks)},
			MooseFS: posix.MooseFSOptions{Exec: c.exec}})
		if err != nil {
			b.Fatal(err)
		}
		defer be.Close()
		d := fwdtest.Start(b, fwd.Options{Backend: be, Scheduler: "twins",
			Sched: sched.Config{Window: time.Millisecond, SkipEmpty: true, IdleStart: true}})
		defer d.Shutdown()
		cl, err := client.Dial(d.Addr())
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		clients[kind] = cl
	}
	w, r := map[string]float64{}, map[string]float64{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, kind := range kinds {
			res, err := fwdbench.Run(context.Background(), clients[kind], p, fwdbench.Options{Dir: "bench-" + kind})
			if err != nil || !res.Verified {
				b.Fatalf("run: %v (verified %v)", err, res.Verified)
			}
			b.Logf("round %d %s: write %.1f MiB/s, read %.1f MiB/s", i, kind, res.Write.Bandwidth/(1<<20), res.Read.Bandwidth/(1<<20))
			w[kind] += res.Write.Bandwidth / (1 << 20)
			r[kind] += res.Read.Bandwidth / (1 << 20)
		}
	}
	for _, kind := range kinds {
		b.ReportMetric(w[kind]/float64(b.N), kind+"-write-MiB/s")
		b.ReportMetric(r[kind]/float64(b.N), kind+"-read-MiB/s")
	}
}
