package moosefs_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdbench"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/rw"
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
	t.Setenv(posix.EnvMooseFSExec, strings.Join(c.exec, " "))
	be, err := posix.Open(posix.Options{Root: c.mnt, Layout: posix.LayoutMooseFS})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
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
		off := int64(ch.Index) * chunkSize
		pieces, err := be.Split(nil, rel, off, min(chunkSize, p.TotalBytes-off))
		if err != nil || len(pieces) != 1 || pieces[0].Server != i {
			t.Errorf("chunk %d on %s (server %d): the layout gives %v, %v", ch.Index, ch.Copies[0].Addr, i, pieces, err)
		}
	}
	t.Logf("mfsfileinfo:\n%s", info)
}
