package tune

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Lustre is a Lustre client's OSC parameters, read and set through its
// parameter tree (root "/" on a client: /sys/fs/lustre/osc/TARGET/... and,
// on older clients, /proc/fs/lustre/osc/TARGET/...; tests use a
// directory laid out the same way).
type Lustre struct {
	Root string
}

// lustreParams are the parameters adaptio reads and sets, with Lustre's
// documented ranges (max_pages_per_rpc: 4 KiB pages up to 16 MiB RPCs).
var lustreParams = map[string][2]int{
	"max_pages_per_rpc":  {1, 4096},
	"max_rpcs_in_flight": {1, 256},
	"max_dirty_mb":       {1, 2047},
}

// LustreParams lists the parameters Lustre knows, sorted.
func LustreParams() []string {
	var out []string
	for k := range lustreParams {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Targets lists the OSC targets (e.g. "lustre-OST0000-osc-ffff8800"),
// from /sys/fs/lustre/osc, else /proc/fs/lustre/osc.
func (l Lustre) Targets() ([]string, string, error) {
	for _, dir := range []string{"sys/fs/lustre/osc", "proc/fs/lustre/osc"} {
		ents, err := os.ReadDir(filepath.Join(l.Root, dir))
		if err != nil {
			continue
		}
		var out []string
		for _, e := range ents {
			if e.IsDir() {
				out = append(out, e.Name())
			}
		}
		if len(out) > 0 {
			return out, filepath.Join(l.Root, dir), nil
		}
	}
	return nil, "", fmt.Errorf("tune: no Lustre OSC target under %s (sys/fs/lustre/osc or proc/fs/lustre/osc): is this a Lustre client?", l.Root)
}

// Get reads parameter name of target.
func (l Lustre) Get(target, name string) (int, error) {
	if _, ok := lustreParams[name]; !ok {
		return 0, fmt.Errorf("tune: unknown Lustre parameter %q (known: %v)", name, LustreParams())
	}
	_, dir, err := l.Targets()
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile(filepath.Join(dir, target, name))
	if err != nil {
		return 0, fmt.Errorf("tune: %w", err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("tune: %s of %s: %q is not a number", name, target, strings.TrimSpace(string(b)))
	}
	return v, nil
}

// Set writes parameter name of target, refusing a value outside Lustre's
// range.
func (l Lustre) Set(target, name string, v int) error {
	r, ok := lustreParams[name]
	if !ok {
		return fmt.Errorf("tune: unknown Lustre parameter %q (known: %v)", name, LustreParams())
	}
	if v < r[0] || v > r[1] {
		return fmt.Errorf("tune: %s = %d outside Lustre's range [%d, %d]", name, v, r[0], r[1])
	}
	_, dir, err := l.Targets()
	if err != nil {
		return err
	}
	path := filepath.Join(dir, target, name)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(v)+"\n"), 0o644); err != nil {
		return fmt.Errorf("tune: setting %s of %s: %w", name, target, err)
	}
	return nil
}

// RPCStats is what a target's rpc_stats says.
type RPCStats struct {
	ReadInFlight, WriteInFlight     int
	PendingReadPages, PendingWrites int
	// PagesPerRPC and InFlight are the histograms: bucket (pages per RPC,
	// RPCs in flight) -> read and write RPC counts.
	PagesPerRPC map[int][2]int64
	InFlight    map[int][2]int64
}

// ReadRPCStats parses target's rpc_stats (in the parameter tree, or in
// sys/kernel/debug/lustre/osc/TARGET on newer clients).
func (l Lustre) ReadRPCStats(target string) (RPCStats, error) {
	_, dir, err := l.Targets()
	if err != nil {
		return RPCStats{}, err
	}
	var f *os.File
	for _, p := range []string{filepath.Join(dir, target, "rpc_stats"), filepath.Join(l.Root, "sys/kernel/debug/lustre/osc", target, "rpc_stats")} {
		if f, err = os.Open(p); err == nil {
			break
		}
	}
	if err != nil {
		return RPCStats{}, fmt.Errorf("tune: rpc_stats of %s: %w", target, err)
	}
	defer f.Close()
	return parseRPCStats(f.Name(), bufio.NewScanner(f))
}

func parseRPCStats(name string, sc *bufio.Scanner) (RPCStats, error) {
	s := RPCStats{PagesPerRPC: map[int][2]int64{}, InFlight: map[int][2]int64{}}
	var hist map[int][2]int64
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		key, val, hasColon := strings.Cut(t, ":")
		num := func() (int, error) { return strconv.Atoi(strings.TrimSpace(val)) }
		var err error
		switch {
		case t == "":
		case strings.HasPrefix(t, "pages per rpc"):
			hist = s.PagesPerRPC
		case strings.HasPrefix(t, "rpcs in flight"):
			hist = s.InFlight
		case strings.HasPrefix(t, "offset"):
			hist = nil // a histogram adaptio does not use
		case key == "read RPCs in flight":
			s.ReadInFlight, err = num()
		case key == "write RPCs in flight":
			s.WriteInFlight, err = num()
		case key == "pending write pages":
			s.PendingWrites, err = num()
		case key == "pending read pages":
			s.PendingReadPages, err = num()
		case hist != nil && hasColon:
			// "BUCKET:  READS PCT CUM | WRITES PCT CUM"
			b, e1 := strconv.Atoi(strings.TrimSpace(key))
			r, w, ok := strings.Cut(val, "|")
			rf, wf := strings.Fields(r), strings.Fields(w)
			if e1 != nil || !ok || len(rf) < 1 || len(wf) < 1 {
				return s, fmt.Errorf("tune: %s line %d: %q is not a histogram row", name, line, t)
			}
			rc, e2 := strconv.ParseInt(rf[0], 10, 64)
			wc, e3 := strconv.ParseInt(wf[0], 10, 64)
			if e2 != nil || e3 != nil {
				return s, fmt.Errorf("tune: %s line %d: %q is not a histogram row", name, line, t)
			}
			hist[b] = [2]int64{rc, wc}
		}
		if err != nil {
			return s, fmt.Errorf("tune: %s line %d: %q: %v", name, line, t, err)
		}
	}
	return s, sc.Err()
}
