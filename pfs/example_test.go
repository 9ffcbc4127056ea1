package pfs_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/adaptio/adaptio/pfs"
)

func Example() {
	dir, _ := os.MkdirTemp("", "pfs-example")
	defer os.RemoveAll(dir)
	c, err := pfs.NewCluster(pfs.ClusterOptions{Servers: 4, Dir: dir, Disk: "none"})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := c.Start(); err != nil || !c.Ready(5*time.Second) {
		fmt.Println("not ready", err)
		return
	}
	defer c.Shutdown()
	b, _ := c.Backend()
	defer b.Close()

	ctx := context.Background()
	b.Create(ctx, "out.dat", 0o644)
	data := make([]byte, 160<<10) // 2.5 stripes of 64 KiB
	pieces, _ := b.Split(nil, "out.dat", 0, int64(len(data)))
	for _, p := range pieces {
		b.WriteAt(ctx, "out.dat", p.Server, data[p.Offset:][:p.Length], p.Offset)
		fmt.Printf("server %d: %d KiB at %d KiB\n", p.Server, p.Length>>10, p.Offset>>10)
	}
	st, _ := b.Stat(ctx, "out.dat")
	fmt.Println("size", st.Size)
	// Output:
	// server 0: 64 KiB at 0 KiB
	// server 1: 64 KiB at 64 KiB
	// server 2: 32 KiB at 128 KiB
	// size 163840
}
