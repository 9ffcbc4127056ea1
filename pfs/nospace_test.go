package pfs_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/adaptio/adaptio/pfs"
	"github.com/adaptio/adaptio/pfs/pfsclient"
	"github.com/adaptio/adaptio/pfs/pfsproto"
)

// smallTmpfs mounts a tmpfs of size bytes on a temporary directory, or
// skips the test where that is not allowed.
func smallTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a small tmpfs for a full data server (needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// A data server whose file system is full answers a write that does not
// fit with "no space left" (StatusNoSpace), which the client returns as an
// error matching syscall.ENOSPC; the server keeps serving, and a client of
// protocol version 0 gets the I/O error status it knows, with the message.
func TestFullDataServerAnswersENOSPC(t *testing.T) {
	ctx := context.Background()
	c, b := startCluster(t, pfs.ClusterOptions{Servers: 2, Dir: smallTmpfs(t, "512k")})
	if err := b.Create(ctx, "f", 0o644); err != nil {
		t.Fatal(err)
	}
	pieces, err := b.Split(nil, "f", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	srv := pieces[0].Server // the server of stripe 0
	small := bytes.Repeat([]byte{5}, 64<<10)
	if _, err := b.WriteAt(ctx, "f", srv, small, 0); err != nil {
		t.Fatal(err)
	}
	_, err = b.WriteLocal(ctx, "f", srv, make([]byte, 1<<20), 64<<10)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("1 MiB into a 512 KiB data server: %v, want an error matching ENOSPC", err)
	}
	var se *pfsclient.ServerError
	if !errors.As(err, &se) || se.Status != pfsproto.StatusNoSpace || se.Server != srv {
		t.Fatalf("error %#v, want a ServerError of server %d with StatusNoSpace", err, srv)
	}
	got := make([]byte, len(small))
	if n, err := b.ReadAt(ctx, "f", srv, got, 0); err != nil || n != len(got) || !bytes.Equal(got, small) {
		t.Fatalf("reading from the full server: %d bytes, %v", n, err)
	}

	// A version-0 peer: a hello without a version.
	nc, err := net.Dial("tcp", c.Addrs()[srv])
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	send := func(r pfsproto.Request) pfsproto.Response {
		hdr, err := pfsproto.AppendRequest(nil, &r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write(append(hdr, r.Data...)); err != nil {
			t.Fatal(err)
		}
		body, err := pfsproto.NewReader(nc, 0).Next(nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := pfsproto.DecodeResponse(body)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := send(pfsproto.Request{ID: 1, Op: pfsproto.OpHello, A: 3}); resp.Status != pfsproto.StatusOK {
		t.Fatalf("hello: status %d %s", resp.Status, resp.Data)
	}
	resp := send(pfsproto.Request{ID: 2, Op: pfsproto.OpWrite, Path: "f", A: 64 << 10, Data: make([]byte, 1<<20)})
	if resp.Status != pfsproto.StatusError || !strings.Contains(string(resp.Data), "no space left") {
		t.Fatalf("version-0 client: status %d %q, want StatusError saying no space left", resp.Status, resp.Data)
	}
}
