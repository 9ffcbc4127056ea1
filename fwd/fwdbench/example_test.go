package fwdbench_test

import (
	"context"
	"fmt"
	"os"

	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdbench"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

func ExampleRun() {
	root, _ := os.MkdirTemp("", "bench-example")
	defer os.RemoveAll(root)
	be, _ := posix.New(root, layout.Layout{StripeSize: 64 << 10, StripeCount: 4})
	defer be.Close()
	d, _ := fwd.New(fwd.Options{Backend: be, Listen: []string{"127.0.0.1:0"}})
	if err := d.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer d.Shutdown()
	c, _ := client.Dial(d.Addr())
	defer c.Close()

	p := workload.Pattern{Processes: 4, Layout: workload.Shared, Spatiality: workload.Strided,
		Op: rw.Write, RequestSize: 32 << 10, TotalBytes: 1 << 20}
	res, err := fwdbench.Run(context.Background(), c, p, fwdbench.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p, p.Class(), res.Write.Requests, fwdbench.Size(res.Read.Bytes), res.Verified)
	// Output: 4p-shared-strided-write-32k-1m SS 32 1MiB true
}

func ExampleRunDirect() {
	dir, _ := os.MkdirTemp("", "bench-direct")
	defer os.RemoveAll(dir)
	p := workload.Pattern{Processes: 4, Layout: workload.FilePerProcess, Spatiality: workload.Contiguous,
		Op: rw.Write, RequestSize: 32 << 10, TotalBytes: 1 << 20}
	res, err := fwdbench.RunDirect(context.Background(), dir, p, fwdbench.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	left, _ := os.ReadDir(dir)
	fmt.Println(p, res.Write.Requests, fwdbench.Size(res.Read.Bytes), res.Verified, len(left))
	// Output: 4p-fpp-contiguous-write-32k-1m 32 1MiB true 0
}
