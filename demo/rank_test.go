package demo

import (
	"context"
	"errors"
	"strings"
	"testing"
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
	r, err := Rank(context.Background(), cfg, settings, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Real) != 2 || len(r.Sim) != 2 || len(r.Phases) != 4 {
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
	if !strings.Contains(out.String(), "Spearman rho") || !strings.Contains(out.String(), "data servers per iteration") {
		t.Errorf("report lacks rho:\n%s", out.String())
	}
}
