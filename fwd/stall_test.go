package fwd_test

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/adaptio/adaptio/disk"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/pfs"
	"github.com/adaptio/adaptio/rw"
)

// stallDevice blocks every access until its gate is closed.
type stallDevice struct{ gate chan struct{} }

func (d stallDevice) Service(time.Duration, rw.Op, int64, int64, *rand.Rand) time.Duration {
	<-d.gate
	return 0
}

// freeDevice costs nothing.
type freeDevice struct{}

func (freeDevice) Service(time.Duration, rw.Op, int64, int64, *rand.Rand) time.Duration { return 0 }

// A stalled data server (its disk blocks, the server stays up) holds only
// the requests that touch it: with more of them outstanding than the
// daemon has workers, writes to the other servers still complete, under
// FIFO and under TWINS, and the stalled ones complete once it resumes.
func TestStalledDataServerDoesNotBlockTheOthers(t *testing.T) {
	for _, scheduler := range []string{"fifo", "twins"} {
		t.Run(scheduler, func(t *testing.T) {
			gate := make(chan struct{})
			var once sync.Once
			release := func() { once.Do(func() { close(gate) }) }
			defer release()
			const stalled = 1
			cl := startClusterWith(t, pfs.ClusterOptions{Servers: 4, Device: func(i int) disk.Device {
				if i == stalled {
					return stallDevice{gate}
				}
				return freeDevice{}
			}})
			be, err := cl.Backend()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { be.Close() })
			d := startDaemon(t, be, fwd.Options{Scheduler: scheduler, Workers: 4})
			c := dial(t, d.Addr())
			f, err := c.Create("data")
			if err != nil {
				t.Fatal(err)
			}
			const stripe = 64 << 10
			var onStalled, onOthers []int64 // stripe offsets by server
			for k := int64(0); k < 32; k++ {
				pieces, err := be.Split(nil, "data", k*stripe, stripe)
				if err != nil {
					t.Fatal(err)
				}
				if pieces[0].Server == stalled {
					onStalled = append(onStalled, k*stripe)
				} else {
					onOthers = append(onOthers, k*stripe)
				}
			}
			// More writes stuck on the stalled server than the daemon has workers.
			stuck := make(chan error, len(onStalled))
			for _, off := range onStalled {
				go func() {
					_, err := f.WriteAt(fwdtest.Content(5, off, stripe), off)
					stuck <- err
				}()
			}
			time.Sleep(100 * time.Millisecond) // they reach the daemon first
			done := make(chan error, len(onOthers))
			for _, off := range onOthers {
				go func() {
					_, err := f.WriteAt(fwdtest.Content(5, off, stripe), off)
					done <- err
				}()
			}
			timeout := time.After(10 * time.Second)
			for range onOthers {
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("write to a live server while another stalls: %v", err)
					}
				case <-timeout:
					t.Fatalf("writes to the live servers blocked behind %d writes to the stalled server (daemon workers: 4)", len(onStalled))
				}
			}
			select {
			case err := <-stuck:
				t.Fatalf("a write to the stalled server returned before it resumed: %v", err)
			default:
			}
			release()
			for range onStalled {
				if err := <-stuck; err != nil {
					t.Fatalf("write to the stalled server after it resumed: %v", err)
				}
			}
		})
	}
}
