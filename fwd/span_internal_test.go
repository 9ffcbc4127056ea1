package fwd

import (
	"bytes"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/internal/poll"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/sched"
)

// piecesOnly hides the posix backend's Spanner: every piece is its own access.
type piecesOnly struct{ backend.Backend }

// On a backend that keeps files whole, the pieces of one request that the
// scheduler releases together run as one access (FIFO releases all 16 of
// a 1 MiB write over 64 KiB stripes); TWINS releases one data server's
// pieces at a time, which do not continue each other (two join only when
// a window ends between them), and a backend without Spanner gets every
// piece on its own. The bytes land either way
// and every piece completes to the scheduler.
func TestSpanJobs(t *testing.T) {
	for _, tt := range []struct {
		name      string
		scheduler string
		hide      bool
		min, max  float64 // backend accesses for one 1 MiB write
	}{
		{"fifo joins the request", "fifo", false, 1, 1},
		{"twins serves one server at a time", "twins", false, 9, 16},
		{"no Spanner, no joins", "fifo", true, 16, 16},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pb, err := posix.New(t.TempDir(), layout.Layout{StripeSize: 64 << 10, StripeCount: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer pb.Close()
			var be backend.Backend = pb
			if tt.hide {
				be = piecesOnly{pb}
			}
			d := startInternal(t, Options{Backend: be, Scheduler: tt.scheduler})
			c, err := client.Dial(d.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			f, err := c.Create("big")
			if err != nil {
				t.Fatal(err)
			}
			want := pattern(3, 0, 1<<20)
			before := testutil.ToFloat64(d.m.batches)
			if n, err := f.WriteAt(want, 0); err != nil || n != len(want) {
				t.Fatalf("WriteAt = %d, %v", n, err)
			}
			if got := testutil.ToFloat64(d.m.batches) - before; got < tt.min || got > tt.max {
				t.Errorf("%v backend accesses for a 1 MiB write, want %v to %v", got, tt.min, tt.max)
			}
			got := make([]byte, len(want))
			if n, err := f.ReadAt(got, 0); err != nil || n != len(got) || !bytes.Equal(got, want) {
				t.Fatalf("ReadAt = %d, %v, equal %v", n, err, bytes.Equal(got, want))
			}
			// A worker reports its batch to the scheduler after answering
			// the client, on its way to the next batch: wait for that.
			var st sched.Stats
			poll.Until(t, "every batch to complete to the scheduler", 5*time.Second, func() bool {
				_ = d.control(func(time.Duration) error { st = d.sw.Stats(); return nil })
				return st.Completed == st.Batches
			})
			if st.BytesCompleted != 2<<20 {
				t.Errorf("scheduler: %d bytes completed, want %d", st.BytesCompleted, 2<<20)
			}
		})
	}
}
