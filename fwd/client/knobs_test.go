package client_test

import (
	"bytes"
	"errors"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/internal/poll"
)

// SetMaxIO changes how later calls are split into requests; requests are
// counted, bytes too.
func TestSetMaxIOSplitsLaterCalls(t *testing.T) {
	d := fwdtest.Start(t, fwd.Options{Backend: fwdtest.Posix(t, t.TempDir())})
	c, err := client.DialOptions(d.Addr(), client.Options{MaxIO: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.Create("split")
	if err != nil {
		t.Fatal(err)
	}
	data := fwdtest.Content(3, 0, 1<<20)
	write := func(maxIO int, wantRequests int64) {
		t.Helper()
		if err := c.SetMaxIO(maxIO); err != nil {
			t.Fatal(err)
		}
		if c.MaxIO() != maxIO {
			t.Fatalf("MaxIO() = %d after SetMaxIO(%d)", c.MaxIO(), maxIO)
		}
		before := c.Stats()
		if _, err := f.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		after := c.Stats()
		if n := after.Requests - before.Requests; n != wantRequests {
			t.Errorf("1 MiB in requests of at most %d bytes: %d requests, want %d", maxIO, n, wantRequests)
		}
		if n := after.WriteBytes - before.WriteBytes; n != int64(len(data)) {
			t.Errorf("%d bytes counted written, want %d", n, len(data))
		}
	}
	write(256<<10, 4)
	write(64<<10, 16)
	got := make([]byte, len(data))
	if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %v, equal %v", err, bytes.Equal(got, data))
	}
	if st := c.Stats(); st.ReadBytes != int64(len(data)) || st.InFlight != 0 || st.Waiting != 0 {
		t.Errorf("stats after the read: %+v", st)
	}
	for _, bad := range []int{client.MinMaxIO - 1, client.MaxMaxIO + 1} {
		if err := c.SetMaxIO(bad); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("SetMaxIO(%d): %v, want fs.ErrInvalid", bad, err)
		}
	}
	if err := c.SetMaxInFlight(-1); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("SetMaxInFlight(-1): %v, want fs.ErrInvalid", err)
	}
}

// With a limit on requests in flight, concurrent writers never have more
// outstanding than the limit, the others wait, every byte lands, and
// changing the limit mid-way loses nothing.
func TestMaxInFlightBoundsConcurrentRequests(t *testing.T) {
	d := fwdtest.Start(t, fwd.Options{Backend: fwdtest.Posix(t, t.TempDir())})
	c, err := client.DialOptions(d.Addr(), client.Options{MaxInFlight: 2, MaxIO: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.Create("bounded")
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 512 << 10
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var most int
	var sawWaiting bool
	var watch sync.WaitGroup
	watch.Add(1)
	go func() {
		defer watch.Done()
		for {
			st := c.Stats()
			most = max(most, st.InFlight)
			sawWaiting = sawWaiting || st.Waiting > 0
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Microsecond):
			}
		}
	}()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := int64(w * each)
			if _, err := f.WriteAt(fwdtest.Content(5, off, each), off); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	close(stop)
	watch.Wait()
	if most > 2 || !sawWaiting {
		t.Errorf("at most %d requests in flight (want <= 2), waiting seen %v (want true)", most, sawWaiting)
	}
	if c.MaxInFlight() != 2 {
		t.Errorf("MaxInFlight() = %d, want 2", c.MaxInFlight())
	}
	// Lower, then lift, the limit while writers run.
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := int64(w * each)
			if _, err := f.WriteAt(fwdtest.Content(6, off, each), off); err != nil {
				t.Error(err)
			}
		}()
	}
	if err := c.SetMaxInFlight(1); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "writers waiting under a limit of 1", 5*time.Second, func() bool { return c.Stats().Waiting > 0 })
	if err := c.SetMaxInFlight(0); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	got := make([]byte, writers*each)
	if _, err := f.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, fwdtest.Content(6, 0, writers*each)) {
		t.Fatal("file differs from the second writes")
	}
}
