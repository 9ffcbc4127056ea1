package fwd_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd"
)

func Example() {
	root, _ := os.MkdirTemp("", "fwd-example")
	defer os.RemoveAll(root)
	be, _ := posix.New(root, backend.Layout{StripeSize: 64 << 10, StripeCount: 4})
	defer be.Close()

	d, err := fwd.New(fwd.Options{Backend: be, Listen: []string{"127.0.0.1:0"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := d.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer d.Shutdown()

	c, _ := fwd.Dial(d.Addr())
	defer c.Close()
	f, _ := c.Create("hello.txt")
	n, _ := f.WriteAt([]byte("hello, forwarder"), 0)
	buf := make([]byte, 5)
	f.ReadAt(buf, 7)
	fi, _ := c.Stat("hello.txt")
	fmt.Println(n, string(buf), fi.Size, d.Window())
	// Output: 16 forwa 16 1ms
}

// A node-local client reads and writes through a Buffer in its shared
// region: the daemon moves the bytes between the Buffer's pages and the
// backend, with no copy in the client.
func ExampleClient_AllocBuffer() {
	root, _ := os.MkdirTemp("", "fwd-example")
	defer os.RemoveAll(root)
	be, _ := posix.New(root, backend.Layout{StripeSize: 64 << 10, StripeCount: 4})
	defer be.Close()
	d, err := fwd.New(fwd.Options{Backend: be, Listen: []string{"unix:" + filepath.Join(root, "fwd.sock")}})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := d.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer d.Shutdown()

	c, _ := fwd.Dial(d.Addr())
	defer c.Close()
	f, _ := c.Create("data")
	buf, _ := c.AllocBuffer(1 << 20)
	defer buf.Free()
	copy(buf.Bytes(), "in the region")
	n, _ := f.WriteBuffer(buf, 0) // returns once the backend has the bytes
	clear(buf.Bytes())
	f.ReadBuffer(buf, 0)
	fmt.Println(buf.Shared(), n, string(buf.Bytes()[:13]))
	// Output: true 1048576 in the region
}
