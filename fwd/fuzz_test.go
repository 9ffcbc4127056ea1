package fwd_test

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdproto"
)

var (
	fuzzOnce sync.Once
	fuzzAddr string
)

// FuzzDaemonConn sends arbitrary bytes, in two writes, after a valid hello,
// to one long-running daemon; the daemon must answer or close, never
// crash, and keep serving a well-behaved client.
func FuzzDaemonConn(f *testing.F) {
	for _, m := range []fwdproto.Msg{
		{Op: fwdproto.OpOpen, ID: 2, Flags: fwdproto.OpenCreate, Path: "fz"},
		{Op: fwdproto.OpWrite, ID: 3, Handle: 1, Offset: 10, Data: []byte("abc")},
		{Op: fwdproto.OpRead, ID: 4, Handle: 1, Length: 100},
		{Op: fwdproto.OpStat, ID: 5, Path: "../x"},
		{Op: fwdproto.OpReadDir, ID: 6, Path: ""},
		{Op: fwdproto.OpTruncate, ID: 7, Path: "fz", Length: 5},
		{Op: fwdproto.OpMknod, ID: 8, Path: "fifo", Mode: fwdproto.TypeFIFO | 0o644},
		{Op: fwdproto.OpMknod, ID: 9, Path: "dev", Mode: fwdproto.TypeChar | 0o600, Rdev: 1<<8 | 3},
	} {
		f.Add(fwdproto.Append(nil, &m))
	}
	f.Add([]byte{0, 0, 0, 12, 0xAD, 0xF0, 1, 5, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzOnce.Do(func() {
			// One daemon for the whole run (deliberately not shut down per input).
			be := newPosixDir(t.TempDir())
			d, err := fwd.New(fwd.Options{Backend: be, Listen: []string{"127.0.0.1:0"}, MaxFrame: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Start(); err != nil {
				t.Fatal(err)
			}
			fuzzAddr = d.Addr()
		})
		nc, err := net.Dial("tcp", fuzzAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		hello := fwdproto.Append(nil, &fwdproto.Msg{Op: fwdproto.OpHello, ID: 1, ClientID: 1})
		mid := len(data) / 2
		nc.Write(append(hello, data[:mid]...))
		nc.Write(data[mid:])
		nc.(*net.TCPConn).CloseWrite() // the daemon sees EOF, answers what it got and closes
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.Copy(io.Discard, nc); err != nil {
			t.Fatalf("daemon did not close the connection after the client's EOF: %v", err)
		}
		c, err := client.Dial(fuzzAddr)
		if err != nil {
			t.Fatalf("daemon stopped accepting: %v", err)
		}
		defer c.Close()
		if _, err := c.Stat("."); err != nil {
			t.Fatalf("daemon stopped serving: %v", err)
		}
	})
}
