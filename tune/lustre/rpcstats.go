package lustre

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// RPCStats is what an OSC target's rpc_stats says. Its format (Lustre's
// osc_rpc_stats_seq_show, lustre/osc/lproc_osc.c) is a header of
// "key: value" lines (snapshot_time, on newer clients start_time and
// elapsed_time, the RPCs in flight now and the pages pending now), then
// three histograms, each a title line "NAME  rpcs % cum % | rpcs % cum %"
// and rows "BUCKET:  READS PCT CUM | WRITES PCT CUM": "pages per rpc"
// (bucket: a power of two, counting the RPCs of more than half of it and
// up to it pages), "rpcs in flight" (bucket: how many RPCs were in flight
// when one was sent) and "offset". Counts are totals since the target
// connected or rpc_stats was last cleared.
type RPCStats struct {
	ReadInFlight, WriteInFlight         int
	PendingReadPages, PendingWritePages int
	// PagesPerRPC and InFlight are the histograms, in the file's order.
	PagesPerRPC []HistRow
	InFlight    []HistRow
}

// HistRow is one row of an rpc_stats histogram.
type HistRow struct {
	Bucket        int
	Reads, Writes int64
}

// Count returns the RPCs, read and written, of the pages-per-RPC
// histogram.
func (s RPCStats) Count() (reads, writes int64) {
	for _, r := range s.PagesPerRPC {
		reads += r.Reads
		writes += r.Writes
	}
	return reads, writes
}

// Pages returns the pages the RPCs moved, read and written, counting each
// RPC at its bucket (the most it can have held: an upper bound, exact
// when the RPCs are whole powers of two pages).
func (s RPCStats) Pages() (reads, writes int64) {
	for _, r := range s.PagesPerRPC {
		reads += r.Reads * int64(r.Bucket)
		writes += r.Writes * int64(r.Bucket)
	}
	return reads, writes
}

// ErrRPCStats is returned for an rpc_stats that cannot be parsed.
var ErrRPCStats = errors.New("tune: malformed rpc_stats")

// maxRPCStatsRows bounds a histogram (Lustre prints at most OBD_HIST_MAX,
// 32, rows).
const maxRPCStatsRows = 64

// maxBucket and maxCount bound a row so that Pages cannot overflow
// (Lustre's buckets are at most 4096 pages and 256 RPCs in flight).
const (
	maxBucket = 1 << 20
	maxCount  = 1 << 42
)

// ParseRPCStats parses an rpc_stats file. Header lines it does not know
// are skipped (newer clients add some); a malformed number, histogram row
// or a repeated bucket is an error naming the line.
func ParseRPCStats(b []byte) (RPCStats, error) {
	var s RPCStats
	var hist *[]HistRow
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	line := 0
	bad := func(t string, why string) error {
		return fmt.Errorf("%w: line %d: %q: %s", ErrRPCStats, line, t, why)
	}
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		key, val, hasColon := strings.Cut(t, ":")
		num := func(dst *int) error {
			v, err := strconv.Atoi(strings.TrimSpace(val))
			if err != nil || v < 0 {
				return bad(t, "want a count")
			}
			*dst = v
			return nil
		}
		var err error
		switch {
		case t == "":
		case strings.HasPrefix(t, "pages per rpc"):
			hist = &s.PagesPerRPC
		case strings.HasPrefix(t, "rpcs in flight"):
			hist = &s.InFlight
		case strings.HasPrefix(t, "offset"):
			hist = nil // a histogram the tuner does not use
		case key == "read RPCs in flight":
			err = num(&s.ReadInFlight)
		case key == "write RPCs in flight":
			err = num(&s.WriteInFlight)
		case key == "pending write pages":
			err = num(&s.PendingWritePages)
		case key == "pending read pages":
			err = num(&s.PendingReadPages)
		case hist != nil && hasColon:
			row, ok := parseHistRow(key, val)
			switch {
			case !ok:
				err = bad(t, `want "BUCKET: READS PCT CUM | WRITES PCT CUM"`)
			case len(*hist) >= maxRPCStatsRows:
				err = bad(t, fmt.Sprintf("more than %d rows", maxRPCStatsRows))
			case len(*hist) > 0 && row.Bucket <= (*hist)[len(*hist)-1].Bucket:
				err = bad(t, "buckets out of order or repeated")
			default:
				*hist = append(*hist, row)
			}
		}
		if err != nil {
			return s, err
		}
	}
	if err := sc.Err(); err != nil {
		return s, fmt.Errorf("%w: line %d: %v", ErrRPCStats, line+1, err)
	}
	return s, nil
}

// parseHistRow parses "BUCKET" and " READS PCT CUM | WRITES PCT CUM".
func parseHistRow(key, val string) (HistRow, bool) {
	b, err := strconv.Atoi(strings.TrimSpace(key))
	if err != nil || b < 0 || b > maxBucket {
		return HistRow{}, false
	}
	r, w, ok := strings.Cut(val, "|")
	rf, wf := strings.Fields(r), strings.Fields(w)
	if !ok || len(rf) != 3 || len(wf) != 3 {
		return HistRow{}, false
	}
	rc, e1 := strconv.ParseInt(rf[0], 10, 64)
	wc, e2 := strconv.ParseInt(wf[0], 10, 64)
	if e1 != nil || e2 != nil || rc < 0 || wc < 0 || rc > maxCount || wc > maxCount {
		return HistRow{}, false
	}
	for _, p := range []string{rf[1], rf[2], wf[1], wf[2]} {
		if v, err := strconv.Atoi(p); err != nil || v < 0 || v > 100 {
			return HistRow{}, false
		}
	}
	return HistRow{Bucket: b, Reads: rc, Writes: wc}, true
}
