package client_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/layout"
)

// A node-local client reads and writes through a Buffer in its shared
// region: the daemon moves the bytes between the Buffer's pages and the
// backend, with no copy in the client.
func ExampleClient_AllocBuffer() {
	root, _ := os.MkdirTemp("", "fwd-example")
	defer os.RemoveAll(root)
	be, _ := posix.New(root, layout.Layout{StripeSize: 64 << 10, StripeCount: 4})
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

	c, _ := client.Dial(d.Addr())
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
