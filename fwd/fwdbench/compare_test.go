package fwdbench_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/fwd/fwdbench"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// Compare alternates forwarded and direct runs of one pattern, each
// verified, alternates which goes first, and reports each round's ratio of
// bandwidths; it leaves both directories as it found them.
func TestCompare(t *testing.T) {
	addr, backendDir := startForwarder(t)
	c := dial(t, addr)
	dir := t.TempDir()
	p := workload.Pattern{Processes: 4, Layout: workload.FilePerProcess, Spatiality: workload.Contiguous, Op: rw.Write, RequestSize: 16 << 10, TotalBytes: 4 * 8 * (16 << 10)}
	var progress bytes.Buffer
	cmp, err := fwdbench.Compare(context.Background(), c, dir, p, fwdbench.Options{Progress: &progress}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmp.Rounds) != 3 {
		t.Fatalf("%d rounds, want 3", len(cmp.Rounds))
	}
	for i, r := range cmp.Rounds {
		if r.DirectFirst != (i%2 == 1) {
			t.Errorf("round %d: direct first %v", i+1, r.DirectFirst)
		}
		for _, res := range []fwdbench.Result{r.Forwarded, r.Direct} {
			if !res.Verified || res.Write.Bytes != p.TotalBytes || res.Read.Bytes != p.TotalBytes {
				t.Errorf("round %d: %+v, want both phases of %d bytes, verified", i+1, res, p.TotalBytes)
			}
		}
	}
	for _, read := range []bool{false, true} {
		ratios := cmp.Ratios(read)
		if len(ratios) != 3 {
			t.Fatalf("read %v: %d ratios, want 3", read, len(ratios))
		}
		for i, x := range ratios {
			r := cmp.Rounds[i]
			f, d := r.Forwarded.Write, r.Direct.Write
			if read {
				f, d = r.Forwarded.Read, r.Direct.Read
			}
			if want := f.Bandwidth / d.Bandwidth; x != want || x <= 0 {
				t.Errorf("read %v round %d: ratio %v, want %v", read, i+1, x, want)
			}
		}
	}
	if got := strings.Count(progress.String(), "through the forwarder"); got != 3 {
		t.Errorf("progress names %d forwarded runs, want 3:\n%s", got, progress.String())
	}
	var out bytes.Buffer
	cmp.Print(&out)
	for _, want := range []string{"rounds     : 3", "write   fwd/direct median", "read    fwd/direct median", "every byte read back matched, in every run"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, d := range []string{dir, filepath.Join(backendDir, "bench")} {
		if ents, err := os.ReadDir(d); err == nil && len(ents) != 0 {
			t.Errorf("%s holds %d entries after the comparison, want none", d, len(ents))
		}
	}

	if _, err := fwdbench.Compare(context.Background(), c, dir, p, fwdbench.Options{}, 0); err == nil {
		t.Error("0 rounds: no error")
	}
	if _, err := fwdbench.Compare(context.Background(), c, filepath.Join(dir, "missing"), p, fwdbench.Options{}, 1); !errors.Is(err, os.ErrNotExist) && !errors.Is(err, fwdbench.ErrNotDir) {
		t.Errorf("missing directory: %v, want a not-exist error", err)
	}
}

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := fwdbench.Median(tt.xs); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.xs, got, tt.want)
		}
	}
}

// Rounds in which the hypervisor stole NoisySteal or more of the CPU time
// are named, and the median of the others is given apart; a real
// comparison on Linux records each phase's steal.
func TestNoisyRounds(t *testing.T) {
	phase := func(op rw.Op, bw, steal float64) fwdbench.Phase {
		return fwdbench.Phase{Op: op, Bytes: 1 << 20, Bandwidth: bw, Steal: steal, StealKnown: true}
	}
	round := func(fwdBW, steal float64) fwdbench.Pair {
		return fwdbench.Pair{
			Forwarded: fwdbench.Result{Write: phase(rw.Write, fwdBW, steal), Read: phase(rw.Read, fwdBW, 0)},
			Direct:    fwdbench.Result{Write: phase(rw.Write, 100, 0.01), Read: phase(rw.Read, 100, 0.01)},
		}
	}
	cmp := fwdbench.Comparison{
		Pattern: workload.Pattern{Processes: 1, Layout: workload.FilePerProcess, Spatiality: workload.Contiguous, Op: rw.Write, RequestSize: 1 << 20, TotalBytes: 1 << 20},
		Rounds:  []fwdbench.Pair{round(80, 0.02), round(40, 0.19), round(70, 0.049), round(30, 0.05)},
	}
	if got, want := cmp.QuietRatios(false, fwdbench.NoisySteal), []float64{0.8, 0.7}; !slices.Equal(got, want) {
		t.Errorf("QuietRatios(write) = %v, want %v", got, want)
	}
	if got := cmp.QuietRatios(true, fwdbench.NoisySteal); len(got) != 4 {
		t.Errorf("QuietRatios(read) = %v, want all 4 rounds", got)
	}
	var out bytes.Buffer
	cmp.Print(&out)
	for _, want := range []string{"steal(%)", "    19.0", "noisy rounds (5% or more of the CPU time stolen by the hypervisor): 2, 4; fwd/direct median of the other 2: 0.750"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "read    noisy") {
		t.Errorf("no read round was noisy, yet:\n%s", out.String())
	}

	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat: steal is not recorded here")
	}
	addr, _ := startForwarder(t)
	c := dial(t, addr)
	p := workload.Pattern{Processes: 2, Layout: workload.FilePerProcess, Spatiality: workload.Contiguous, Op: rw.Write, RequestSize: 16 << 10, TotalBytes: 2 * 4 * (16 << 10)}
	real, err := fwdbench.Compare(context.Background(), c, t.TempDir(), p, fwdbench.Options{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, ph := range []fwdbench.Phase{real.Rounds[0].Forwarded.Write, real.Rounds[0].Forwarded.Read, real.Rounds[0].Direct.Write, real.Rounds[0].Direct.Read} {
		if ph.StealKnown && (ph.Steal < 0 || ph.Steal > 1) {
			t.Errorf("%s phase: steal %v, want a fraction", ph.Op, ph.Steal)
		}
	}
}
