// Package lustretest lays out a fake Lustre client's OSC parameter tree in
// a directory, in the layouts Lustre's clients use, and moves it: Step
// reads the parameters in force, runs a model of the client's write
// queues for a while, and rewrites every target's rpc_stats in Lustre's
// format, so a tuner can be tested end to end without Lustre.
//
//	tr, _ := lustretest.New(dir, 3, lustretest.Layout212, lustretest.Model{...})
//	for { tr.Step(time.Second) }  // while the tuner reads and writes dir
package lustretest

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Layout is where a client keeps its files, relative to the root.
type Layout struct {
	Params, RPCStats string // directories holding one directory per target
}

// The layouts of Lustre's clients.
var (
	// Layout215: parameters in /sys, rpc_stats in debugfs (Lustre 2.15 on).
	Layout215 = Layout{"sys/fs/lustre/osc", "sys/kernel/debug/lustre/osc"}
	// Layout212: parameters in /sys, rpc_stats in /proc (Lustre 2.12).
	Layout212 = Layout{"sys/fs/lustre/osc", "proc/fs/lustre/osc"}
	// LayoutProc: everything in /proc (older clients).
	LayoutProc = Layout{"proc/fs/lustre/osc", "proc/fs/lustre/osc"}
)

// Model is each target's client queue. The OST serves
// Peak·exp(-0.15·(log2(pages/BestPages)² + log2(inflight/BestInFlight)²))
// bytes a second (times ContentionShare while contention lasts); the
// application writes App bytes a second into the target's cache. When the
// OST serves less than that the cache stays full (max_dirty_mb of pending
// write pages) and the bandwidth is the OST's; otherwise the cache drains
// and the bandwidth is the application's.
type Model struct {
	Peak, App               float64 // bytes per second
	BestPages, BestInFlight int
	// Contention lasts from ContentionFrom to ContentionTo (model time).
	ContentionFrom, ContentionTo time.Duration
	ContentionShare              float64
}

// Served is what the OST serves at these settings at model time at.
func (m Model) Served(pages, inflight int, at time.Duration) float64 {
	d := func(v, best int) float64 { x := math.Log2(float64(v) / float64(best)); return x * x }
	bw := m.Peak * math.Exp(-0.15*(d(pages, m.BestPages)+d(inflight, m.BestInFlight)))
	if at >= m.ContentionFrom && at < m.ContentionTo {
		bw *= m.ContentionShare
	}
	return bw
}

// Settings are one target's parameters as Step read them.
type Settings struct {
	At                       time.Duration // model time at the start of the step
	Target                   string
	Pages, InFlight, DirtyMB int
	Bandwidth                float64 // bytes per second moved in the step
}

type target struct {
	name           string
	pages, flights [32]int64 // the histograms' write columns, by log2 bucket / in-flight count
	pendingPages   int64
	inFlight       int
	last           Settings // the parameters read at the last step
}

// Tree is a moving fake client. Its methods are safe for concurrent use.
type Tree struct {
	Root    string
	Layout  Layout
	Model   Model
	mu      sync.Mutex
	now     time.Duration
	targets []*target
	history []Settings
}

// New lays out n targets (lustre-OST000N-osc-ffff8800) under root at
// Lustre's defaults (256 pages per RPC, 8 RPCs in flight, 32 MiB dirty)
// with empty rpc_stats.
func New(root string, n int, l Layout, m Model) (*Tree, error) {
	t := &Tree{Root: root, Layout: l, Model: m}
	for i := range n {
		tg := &target{name: fmt.Sprintf("lustre-OST%04x-osc-ffff8800", i)}
		t.targets = append(t.targets, tg)
		for _, d := range []string{l.Params, l.RPCStats} {
			if err := os.MkdirAll(filepath.Join(root, d, tg.name), 0o755); err != nil {
				return nil, err
			}
		}
		for name, v := range map[string]string{"max_pages_per_rpc": "256\n", "max_rpcs_in_flight": "8\n", "max_dirty_mb": "32\n"} {
			if err := os.WriteFile(filepath.Join(root, l.Params, tg.name, name), []byte(v), 0o644); err != nil {
				return nil, err
			}
		}
		if err := t.writeStats(tg); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Targets lists the targets' names.
func (t *Tree) Targets() []string {
	var out []string
	for _, tg := range t.targets {
		out = append(out, tg.name)
	}
	return out
}

// Param reads a target's parameter file (emptyParam, -1, when it is empty).
func (t *Tree) Param(target, name string) (int, error) {
	b, err := os.ReadFile(filepath.Join(t.Root, t.Layout.Params, target, name))
	if err != nil {
		return 0, err
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return emptyParam, nil
	}
	return strconv.Atoi(v)
}

// emptyParam is what Param reads from an empty parameter file.
const emptyParam = -1

// Step runs the model for dt with the parameters in force now and rewrites
// every rpc_stats; it returns the settings it read.
func (t *Tree) Step(dt time.Duration) ([]Settings, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Settings
	for _, tg := range t.targets {
		s := Settings{At: t.now, Target: tg.name}
		var err error
		for _, p := range []struct {
			name string
			dst  *int
		}{{"max_pages_per_rpc", &s.Pages}, {"max_rpcs_in_flight", &s.InFlight}, {"max_dirty_mb", &s.DirtyMB}} {
			if *p.dst, err = t.Param(tg.name, p.name); err != nil {
				return out, fmt.Errorf("lustretest: %s of %s: %w", p.name, tg.name, err)
			}
		}
		// A parameter file caught empty is a tuner's write under way
		// (truncate, then write): a real client's files change in one
		// write, so the model keeps the value in force at the last step.
		for _, p := range []struct{ dst, last *int }{{&s.Pages, &tg.last.Pages}, {&s.InFlight, &tg.last.InFlight}, {&s.DirtyMB, &tg.last.DirtyMB}} {
			if *p.dst == emptyParam && *p.last > 0 {
				*p.dst = *p.last
			}
		}
		if s.Pages < 1 || s.InFlight < 1 || s.DirtyMB < 1 {
			return out, fmt.Errorf("lustretest: %s holds pages %d, in flight %d, dirty %d MiB", tg.name, s.Pages, s.InFlight, s.DirtyMB)
		}
		served := t.Model.Served(s.Pages, s.InFlight, t.now)
		moved, pending, inFlight := t.Model.App, int64(0), 1
		if served < t.Model.App {
			moved, pending, inFlight = served, int64(s.DirtyMB)<<20/4096, s.InFlight
		}
		s.Bandwidth = moved
		tg.last = s
		rpcs := int64(moved * dt.Seconds() / float64(s.Pages*4096))
		tg.pages[min(bits.Len(uint(s.Pages-1)), 31)] += rpcs // bucket 2^i holds RPCs of (2^(i-1), 2^i] pages
		tg.flights[min(inFlight, 31)] += rpcs
		tg.pendingPages, tg.inFlight = pending, inFlight
		if err := t.writeStats(tg); err != nil {
			return out, err
		}
		out = append(out, s)
	}
	t.now += dt
	t.history = append(t.history, out...)
	return out, nil
}

// History returns every Settings Step has read.
func (t *Tree) History() []Settings {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Settings(nil), t.history...)
}

// writeStats writes tg's rpc_stats whole (a new file renamed over the old:
// a reader never sees half of one).
func (t *Tree) writeStats(tg *target) error {
	var b bytes.Buffer
	var pages, flights [][2]int64
	for i := range tg.pages {
		pages = append(pages, [2]int64{0, tg.pages[i]})
		flights = append(flights, [2]int64{0, tg.flights[i]})
	}
	FormatRPCStats(&b, 0, tg.inFlight, tg.pendingPages, 0, pages, flights)
	path := filepath.Join(t.Root, t.Layout.RPCStats, tg.name, "rpc_stats")
	tmp := path + ".new"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// FormatRPCStats writes an rpc_stats as Lustre's client prints it
// (osc_rpc_stats_seq_show, Lustre 2.15's header): pages[i] and
// flights[i] are the read and write counts of bucket 2^i pages and of i
// RPCs in flight. Rows run from the first bucket to the last that makes
// the cumulative count whole, zeros between included.
func FormatRPCStats(b *bytes.Buffer, readInFlight, writeInFlight int, pendingWrite, pendingRead int64, pages, flights [][2]int64) {
	fmt.Fprintf(b, "snapshot_time:             1764320000.000000000 secs.nsecs\n")
	fmt.Fprintf(b, "start_time:                1764310000.000000000 secs.nsecs\n")
	fmt.Fprintf(b, "elapsed_time:              10000.000000000 secs.nsecs\n")
	fmt.Fprintf(b, "read RPCs in flight:  %d\n", readInFlight)
	fmt.Fprintf(b, "write RPCs in flight: %d\n", writeInFlight)
	fmt.Fprintf(b, "pending write pages:  %d\n", pendingWrite)
	fmt.Fprintf(b, "pending read pages:   %d\n", pendingRead)
	hist := func(title string, rows [][2]int64, bucket func(i int) int) {
		fmt.Fprintf(b, "\n\t\t\tread\t\t\twrite\n")
		fmt.Fprintf(b, "%-22srpcs   %% cum %% |       rpcs   %% cum %%\n", title)
		var rt, wt, rc, wc int64
		for _, r := range rows {
			rt += r[0]
			wt += r[1]
		}
		pct := func(a, b int64) int64 {
			if b == 0 {
				return 0
			}
			return a * 100 / b
		}
		for i, r := range rows {
			rc += r[0]
			wc += r[1]
			fmt.Fprintf(b, "%d:\t\t%10d %3d %3d   | %10d %3d %3d\n", bucket(i), r[0], pct(r[0], rt), pct(rc, rt), r[1], pct(r[1], wt), pct(wc, wt))
			if rc == rt && wc == wt {
				break
			}
		}
	}
	hist("pages per rpc", pages, func(i int) int { return 1 << i })
	hist("rpcs in flight", flights, func(i int) int { return i })
	hist("offset", [][2]int64{{0, 0}}, func(int) int { return 0 })
}
