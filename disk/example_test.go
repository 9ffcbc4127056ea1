package disk_test

import (
	"fmt"
	"time"

	"github.com/adaptio/adaptio/disk"
	"github.com/adaptio/adaptio/rw"
)

// A write that arrives after its sector has passed under the head waits
// almost a full revolution (10,000 rpm: 6 ms); one queued back to back streams.
func Example() {
	cfg, _ := disk.DefaultConfig("hdd")
	cfg.SeekJitter = 0
	d, _ := disk.New(cfg)
	pl := disk.DefaultPlacement(cfg.CapacityBytes)
	var now time.Duration
	first := d.Service(now, rw.Write, pl.Addr(1, 0), 64<<10, nil)
	now += first
	queued := d.Service(now, rw.Write, pl.Addr(1, 64<<10), 64<<10, nil)
	now += queued + 100*time.Microsecond
	late := d.Service(now, rw.Write, pl.Addr(1, 128<<10), 64<<10, nil)
	fmt.Println(queued < 500*time.Microsecond, late > 5*time.Millisecond)
	// Output: true true
}
