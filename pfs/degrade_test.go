package pfs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/pfs"
	"github.com/adaptio/adaptio/pfs/pfsclient"
)

// nameAvoiding returns a file name under dir whose stripe 0 is not on
// server dead.
func nameAvoiding(t *testing.T, b *pfsclient.Client, dir string, dead int) string {
	t.Helper()
	for i := range 64 {
		name := fmt.Sprintf("%s/small%d", dir, i)
		p, err := b.Split(nil, name, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if p[0].Server != dead {
			return name
		}
	}
	t.Fatal("no name avoids the server")
	return ""
}

// One dead data server does not take the namespace with it: listings,
// stat, mkdir and create go on (the metadata server has the namespace), a
// file whose bytes live on the other servers reads back whole, reads that
// touch the dead server fail with ErrServerDown, and removing a name waits
// until every server can drop its object. Once the server is back, it gets
// the directory and object it missed at their first write.
func TestDeadDataServerKeepsTheNamespace(t *testing.T) {
	ctx := context.Background()
	const stripe = 64 << 10
	c, b := startCluster(t, pfs.ClusterOptions{Servers: 4})
	if err := b.Mkdir(ctx, "d", 0o755); err != nil {
		t.Fatal(err)
	}
	dead := 2
	small := nameAvoiding(t, b, "d", dead)
	write := func(name string, data []byte) error {
		pieces, err := b.Split(nil, name, 0, int64(len(data)))
		if err != nil {
			return err
		}
		for _, p := range pieces {
			if _, err := b.WriteAt(ctx, name, p.Server, data[p.Offset:p.Offset+p.Length], p.Offset); err != nil {
				return err
			}
		}
		return nil
	}
	read := func(name string, n int) ([]byte, error) {
		got := make([]byte, n)
		pieces, err := b.Split(nil, name, 0, int64(n))
		if err != nil {
			return nil, err
		}
		for _, p := range pieces {
			if _, err := b.ReadAt(ctx, name, p.Server, got[p.Offset:p.Offset+p.Length], p.Offset); err != nil {
				return nil, err
			}
		}
		return got, nil
	}
	smallData := bytes.Repeat([]byte("s"), 1000)
	bigData := make([]byte, 8*stripe)
	for i := range bigData {
		bigData[i] = byte(i * 7)
	}
	for name, data := range map[string][]byte{small: smallData, "d/big": bigData} {
		if err := b.Create(ctx, name, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := write(name, data); err != nil {
			t.Fatal(err)
		}
	}

	c.Server(dead).Shutdown()

	ents, err := b.ReadDir(ctx, "d")
	if err != nil {
		t.Fatalf("readdir with server %d down: %v", dead, err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
	}
	slices.Sort(names)
	if want := []string{"big", small[2:]}; !slices.Equal(names, want) {
		t.Errorf("listing %v, want %v", names, want)
	}
	if fi, err := b.Stat(ctx, small); err != nil || fi.Size != int64(len(smallData)) {
		t.Fatalf("stat of a file off the dead server: %+v, %v; want size %d", fi, err, len(smallData))
	}
	if fi, err := b.Stat(ctx, "d"); err != nil || !fi.IsDir {
		t.Fatalf("stat of the directory: %+v, %v", fi, err)
	}
	if got, err := read(small, len(smallData)); err != nil || !bytes.Equal(got, smallData) {
		t.Fatalf("reading a file off the dead server: %v", err)
	}
	pieces, _ := b.Split(nil, "d/big", 0, int64(len(bigData)))
	for _, p := range pieces {
		got := make([]byte, p.Length)
		_, err := b.ReadAt(ctx, "d/big", p.Server, got, p.Offset)
		switch {
		case p.Server == dead && !errors.Is(err, backend.ErrServerDown):
			t.Fatalf("read of the dead server's stripe at %d: %v, want ErrServerDown", p.Offset, err)
		case p.Server != dead && (err != nil || !bytes.Equal(got, bigData[p.Offset:p.Offset+p.Length])):
			t.Fatalf("read of server %d's stripe at %d: %v", p.Server, p.Offset, err)
		}
	}
	if err := b.Mkdir(ctx, "d/new", 0o755); err != nil {
		t.Fatalf("mkdir with a server down: %v", err)
	}
	if err := b.Create(ctx, "d/new/f", 0o600); err != nil {
		t.Fatalf("create with a server down: %v", err)
	}
	if err := b.Unlink(ctx, small); !errors.Is(err, backend.ErrServerDown) {
		t.Fatalf("unlink with a server down: %v, want ErrServerDown (the dead server keeps an object)", err)
	}
	if _, err := b.Stat(ctx, small); err != nil {
		t.Fatalf("the name of a refused unlink is gone: %v", err)
	}

	if err := c.Restart(dead); err != nil {
		t.Fatal(err)
	}
	fresh := make([]byte, 4*stripe)
	for i := range fresh {
		fresh[i] = byte(i*3 + 1)
	}
	if err := write("d/new/f", fresh); err != nil {
		t.Fatalf("writing, on the server back, a file created while it was down: %v", err)
	}
	if got, err := read("d/new/f", len(fresh)); err != nil || !bytes.Equal(got, fresh) {
		t.Fatalf("reading it back: %v", err)
	}
	if fi, err := b.Stat(ctx, "d/new/f"); err != nil || fi.Size != int64(len(fresh)) || fi.Mode.Perm() != 0o600 {
		t.Fatalf("stat: %+v, %v", fi, err)
	}
	if err := b.Unlink(ctx, small); err != nil {
		t.Fatalf("unlink once every server is up: %v", err)
	}
}

// Without the metadata server the namespace fails, saying which server.
func TestDeadMetadataServerFailsTheNamespace(t *testing.T) {
	ctx := context.Background()
	c, b := startCluster(t, pfs.ClusterOptions{Servers: 3})
	if err := b.Mkdir(ctx, "d", 0o755); err != nil {
		t.Fatal(err)
	}
	c.Server(pfsclient.MetadataServer).Shutdown()
	if _, err := b.Stat(ctx, "d"); !errors.Is(err, backend.ErrServerDown) {
		t.Fatalf("stat without the metadata server: %v, want ErrServerDown", err)
	}
	if err := b.Mkdir(ctx, "e", 0o755); !errors.Is(err, backend.ErrServerDown) {
		t.Fatalf("mkdir without the metadata server: %v, want ErrServerDown", err)
	}
}
