// Package cpustat reads the machine's CPU time accounting (Linux
// /proc/stat), to tell how much of it a hypervisor took for other guests
// while a benchmark ran. On a shared virtual machine that "steal" time
// moves throughput ratios more than anything measured: a forwarded run,
// whose client, ring poller and workers hand each request on, loses more
// to a descheduled CPU than direct I/O, whose processes run on their own.
//
//	t0, _ := cpustat.Read()
//	run()
//	t1, _ := cpustat.Read()
//	stolen, ok := t1.StolenSince(t0) // a fraction of the machine's CPU time
package cpustat

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Path is where Read finds the accounting.
const Path = "/proc/stat"

// ErrFormat reports accounting that is not in /proc/stat's format.
var ErrFormat = errors.New("cpustat: malformed accounting")

// Times is the machine's CPU time so far, over all CPUs, in the kernel's
// clock ticks (USER_HZ).
type Times struct {
	// Total is every state's time: user, nice, system, idle, iowait,
	// irq, softirq and steal (guest time is already in user and nice).
	Total uint64
	// Steal is the time the hypervisor ran something else while this
	// machine's virtual CPUs wanted to run.
	Steal uint64
}

// Read returns the machine's CPU times from /proc/stat.
func Read() (Times, error) {
	f, err := os.Open(Path)
	if err != nil {
		return Times{}, err
	}
	defer f.Close()
	return Parse(f)
}

// Parse reads the aggregate "cpu" line of /proc/stat's format: the label,
// then user, nice, system, idle, and, on kernels since 2.6.11, iowait, irq,
// softirq and steal (and guest fields, which it ignores). Fewer than four
// values, a value that is not a decimal number, or no such line is an
// ErrFormat; a kernel without the steal field reads as no steal.
func Parse(r io.Reader) (Times, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "cpu" {
			continue
		}
		vals := fields[1:]
		if len(vals) < 4 {
			return Times{}, fmt.Errorf("%w: the cpu line has %d values, want at least 4", ErrFormat, len(vals))
		}
		var t Times
		for i, s := range vals[:min(len(vals), 8)] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return Times{}, fmt.Errorf("%w: the cpu line's value %d is %q", ErrFormat, i+1, s)
			}
			if t.Total+v < t.Total {
				return Times{}, fmt.Errorf("%w: the cpu line's values overflow 64 bits", ErrFormat)
			}
			t.Total += v
			if i == 7 {
				t.Steal = v
			}
		}
		return t, nil
	}
	if err := sc.Err(); err != nil {
		return Times{}, err
	}
	return Times{}, fmt.Errorf("%w: no cpu line", ErrFormat)
}

// StolenSince is the fraction of the machine's CPU time the hypervisor
// stole between earlier and t; ok is false if no time passed (or the
// counters went back, as when the two readings come from different
// machines, or steal grew more than the total).
func (t Times) StolenSince(earlier Times) (fraction float64, ok bool) {
	if t.Total <= earlier.Total || t.Steal < earlier.Steal || t.Steal-earlier.Steal > t.Total-earlier.Total {
		return 0, false
	}
	return float64(t.Steal-earlier.Steal) / float64(t.Total-earlier.Total), true
}
