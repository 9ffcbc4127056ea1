package demo

import (
	"bufio"
	"log/slog"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// ProcStats is a snapshot of the process's resources, logged by a long demo
// so that a soak run shows whether memory or goroutines grow.
type ProcStats struct {
	Goroutines int
	HeapBytes  uint64 // live heap objects
	GoBytes    uint64 // memory the Go runtime has mapped
	RSSBytes   uint64 // resident set (Linux /proc; 0 elsewhere)
}

// ReadProcStats reads the current ProcStats.
func ReadProcStats() ProcStats {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	p := ProcStats{Goroutines: runtime.NumGoroutine()}
	if s[0].Value.Kind() == metrics.KindUint64 {
		p.HeapBytes = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		p.GoBytes = s[1].Value.Uint64()
	}
	p.RSSBytes = residentBytes()
	return p
}

// residentBytes is VmRSS from /proc/self/status (0 if unavailable).
func residentBytes() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// logProcStats logs the process's resources under msg.
func logProcStats(l *slog.Logger, msg string) ProcStats {
	p := ReadProcStats()
	l.Info(msg, "goroutines", p.Goroutines, "heap_mib", mibOf(p.HeapBytes), "go_mib", mibOf(p.GoBytes), "rss_mib", mibOf(p.RSSBytes))
	return p
}

func mibOf(b uint64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) }

// watchProcStats logs the process's resources every interval until stop
// is closed.
func watchProcStats(l *slog.Logger, interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			logProcStats(l, "process")
		}
	}
}
