package fwd_test

import (
	"fmt"
	"os"

	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/layout"
)

func Example() {
	root, _ := os.MkdirTemp("", "fwd-example")
	defer os.RemoveAll(root)
	be, _ := posix.New(root, layout.Layout{StripeSize: 64 << 10, StripeCount: 4})
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

	c, _ := client.Dial(d.Addr())
	defer c.Close()
	f, _ := c.Create("hello.txt")
	n, _ := f.WriteAt([]byte("hello, forwarder"), 0)
	buf := make([]byte, 5)
	f.ReadAt(buf, 7)
	fi, _ := c.Stat("hello.txt")
	fmt.Println(n, string(buf), fi.Size, d.Window())
	// Output: 16 forwa 16 1ms
}
