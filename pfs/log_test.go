package pfs_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/internal/testlog"
	"github.com/adaptio/adaptio/pfs"
	"github.com/adaptio/adaptio/pfs/pfsclient"
)

// A data server's death and return are logged once each at the default
// level, with its address, however many requests meet it down.
func TestDataServerDownAndBackLoggedOnce(t *testing.T) {
	ctx := context.Background()
	c, _ := startCluster(t, pfs.ClusterOptions{Servers: 2})
	var out testlog.Buffer
	b, err := pfsclient.NewClient(pfsclient.ClientOptions{Addrs: c.Addrs(), Logger: slog.New(slog.NewTextHandler(&out, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Create(ctx, "f", 0o644); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 10)
	const dead = 1
	addr := c.Addrs()[dead]
	c.Server(dead).Shutdown()
	for range 20 {
		if _, err := b.ReadLocal(ctx, "f", dead, p, 0); err == nil {
			t.Fatal("read from a dead server succeeded")
		}
	}
	if err := c.Restart(dead); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := b.ReadLocal(ctx, "f", dead, p, 0); err != nil {
			t.Fatalf("read after the restart: %v", err)
		}
	}
	log := out.String()
	for _, want := range []string{"level=WARN msg=\"pfs data server down", "level=INFO msg=\"pfs data server back\""} {
		if n := strings.Count(log, want); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", want, n, log)
		}
	}
	if n := strings.Count(log, "addr="+addr); n != 2 {
		t.Errorf("address %s in %d lines, want 2:\n%s", addr, n, log)
	}
}
