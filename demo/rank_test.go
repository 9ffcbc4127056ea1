package demo

import (
	"bytes"
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseSettings(t *testing.T) {
	s, err := ParseSettings("125us, 8ms,FIFO")
	if err != nil || len(s) != 3 || !s[2].FIFO || s[0].String() != "125µs" || s[1].String() != "8ms" {
		t.Fatalf("ParseSettings: %v %v", s, err)
	}
	for _, bad := range []string{"3ms", "fast", ""} {
		if _, err := ParseSettings(bad); !errors.Is(err, ErrBadConfig) {
			t.Errorf("ParseSettings(%q): %v, want ErrBadConfig", bad, err)
		}
	}
}

// Rank runs every setting on the real stack and in the simulator and
// reports a time per phase for each: the FIFO row really runs FIFO (in
// the simulator its time differs from every TWINS window's).
func TestRankRunsEverySettingOnBothStacks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real stack twice")
	}
	settings := []Setting{{Window: 125e3}, {FIFO: true}}
	cfg := Config{Nodes: 2, Processes: 16, PhaseBytes: 4 << 20, Compare: 1, Mix: true, StateDir: t.TempDir()}
	var progress strings.Builder
	r, err := Rank(context.Background(), cfg, settings, RankOptions{Statistic: StatMean, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Real) != 2 || len(r.Sim) != 2 || len(r.Phases) != 4 || len(r.RealTimes) != 2 || len(r.SimTimes) != 2 {
		t.Fatalf("ranking has %d real and %d simulated rows over %d phases, want 2, 2 and 4", len(r.Real), len(r.Sim), len(r.Phases))
	}
	for i := range settings {
		for p := range r.Phases {
			if !(r.Real[i][p] > 0) || !(r.Sim[i][p] > 0) {
				t.Errorf("%v %s: real %v s, sim %v s; want both measured", settings[i], r.Phases[p], r.Real[i][p], r.Sim[i][p])
			}
		}
	}
	for i := range settings {
		for p := range r.Phases {
			if r.RealServers[i][p].Accesses == 0 || r.SimServers[i][p].Accesses == 0 {
				t.Errorf("%v %s: data servers served %d accesses on the real stack and %d in the simulator; want both counted",
					settings[i], r.Phases[p], r.RealServers[i][p].Accesses, r.SimServers[i][p].Accesses)
			}
		}
	}
	if r.Sim[0][0] == r.Sim[1][0] {
		t.Errorf("simulated FIFO and 125µs took the same %v s: the FIFO row did not run FIFO", r.Sim[0][0])
	}
	if got := strings.Count(progress.String(), "\n"); got != 2 {
		t.Errorf("%d progress lines, want one per setting", got)
	}
	var out strings.Builder
	r.Write(&out)
	if !strings.Contains(out.String(), "Spearman rho") || !strings.Contains(out.String(), "data servers per iteration") || !strings.Contains(out.String(), "real wake µs") {
		t.Errorf("report lacks rho or counters:\n%s", out.String())
	}
	// The real daemons measured their workers' wake-ups in every phase.
	for i := range settings {
		for p := range r.Phases {
			if w := r.RealWakes[i][p]; w.Wakes == 0 || w.Mean() <= 0 {
				t.Errorf("%v %s: real daemons' wake-ups %+v, want some measured", settings[i], r.Phases[p], w)
			}
		}
	}

	// The saved ranking's real side stands for a new ranking of the same
	// workload, which then runs only the simulator, here with a dispatch
	// delay; another workload's is refused.
	var saved bytes.Buffer
	if err := r.Save(&saved); err != nil {
		t.Fatal(err)
	}
	old, err := ReadRanking(&saved)
	if err != nil {
		t.Fatal(err)
	}
	delayed := cfg
	delayed.SimDispatchDelay = 500 * time.Microsecond
	r2, err := Rank(context.Background(), delayed, settings, RankOptions{Statistic: StatMedian, Real: &old})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r2.RealTimes, r.RealTimes) || !reflect.DeepEqual(r2.RealServers, r.RealServers) {
		t.Errorf("reused real side differs: %v, saved %v", r2.RealTimes, r.RealTimes)
	}
	if reflect.DeepEqual(r2.SimTimes, r.SimTimes) {
		t.Errorf("the simulator with a 500µs dispatch delay ran as without: %v", r2.SimTimes)
	}
	other := cfg
	other.Processes = 32
	if _, err := Rank(context.Background(), other, settings, RankOptions{Real: &old}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("reusing another workload's real runs: %v, want ErrBadConfig", err)
	}
}

// A setting's figure is the median of its iterations by default: one
// outlying iteration moves the mean, not the median.
func TestReduceTimes(t *testing.T) {
	times := [][][]float64{{{1.0, 1.1, 3.0}, {2, 4}}, {{1.2, 1.2, 1.2}, {}}}
	med, avg := reduceTimes(times, StatMedian), reduceTimes(times, StatMean)
	if med[0][0] != 1.1 || med[0][1] != 3 || med[1][0] != 1.2 || med[1][1] != 0 {
		t.Errorf("medians %v, want [[1.1 3] [1.2 0]]", med)
	}
	if math.Abs(avg[0][0]-5.1/3) > 1e-12 || avg[1][0] != 1.2 {
		t.Errorf("means %v", avg)
	}
	// By the median the steady setting is slower; by the mean, faster.
	if !(med[0][0] < med[1][0]) || !(avg[0][0] > avg[1][0]) {
		t.Errorf("median %v and mean %v rank the settings alike; the outlier should decide only the mean", med, avg)
	}
}

func TestRankRefusesUnknownStatistic(t *testing.T) {
	_, err := Rank(context.Background(), Config{StateDir: t.TempDir()}, RankSettings(), RankOptions{Statistic: "mode"})
	if !errors.Is(err, ErrBadConfig) {
		t.Errorf("statistic mode: %v, want ErrBadConfig", err)
	}
}
