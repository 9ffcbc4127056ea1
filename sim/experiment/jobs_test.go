package experiment_test

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/qos"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/sim/experiment"
)

// TestJobScenarioTargets: on both two-job mixes, fair sharing through the
// QoS gate gives Jain's index >= 0.9 on what it shares (bytes under
// qos.ShareBytes, the data servers' time under qos.ShareTime; the jobs have
// as many processes and keep the node busy); shares of server time tilted
// toward the efficient job under the floor 0.9 keep Jain's index of server
// time at least 0.9 and move more in total than equal shares (at least 10%
// more); and a rule capping the first job holds it within 10% of its rate
// while the other job gains at least what it frees.
func TestJobScenarioTargets(t *testing.T) {
	scs, err := experiment.JobScenarios(2, 32)
	if err != nil {
		t.Fatal(err)
	}
	base := sim.Config{JobsFor: 5 * time.Second, Threads: 16, Seed: 1}
	const rate = 10 << 20
	for _, sc := range scs {
		t.Run(sc.Name, func(t *testing.T) {
			sts := experiment.JobSettings(nil, 16, qos.Rule{Job: sc.Jobs[0].Name, Rate: rate}, 0.9)
			var fair, fairBytes, floor, capped experiment.JobRow
			var rows []experiment.JobRow
			for _, st := range sts {
				r, err := experiment.RunJobs(context.Background(), base, sc, st, 1)
				if err != nil {
					t.Fatal(err)
				}
				rows = append(rows, r)
				switch {
				case st.Label == "fifo+fair bytes":
					fairBytes = r
				case st.Label == "fifo+fair time runs":
					fair = r
				case st.Label == "fifo+fair time floor 0.9":
					floor = r
				case st.QoS != nil && len(st.QoS.Rules) > 0:
					capped = r
				}
			}
			if fairBytes.Jain < 0.9 {
				t.Errorf("fair sharing of bytes: Jain of bandwidths %.3f, want >= 0.9 (%+v)", fairBytes.Jain, fairBytes.Jobs)
			}
			if fair.JainTime < 0.9 {
				t.Errorf("fair sharing of time: Jain of server time %.3f, want >= 0.9 (%+v)", fair.JainTime, fair.Jobs)
			}
			if floor.JainTime < 0.9 || floor.Total < 1.1*fair.Total {
				t.Errorf("floor 0.9: %.1f MiB/s, Jain of server time %.3f; equal shares %.1f MiB/s: want Jain >= 0.9 and 10%% more in total",
					floor.Total/(1<<20), floor.JainTime, fair.Total/(1<<20))
			}
			for i, a := range fair.Alone {
				if a <= 0 || len(fair.Alone) != len(sc.Jobs) {
					t.Fatalf("job %d alone: %.0f B/s of %d runs alone", i, a, len(fair.Alone))
				}
			}
			got := capped.Jobs[0].Bandwidth
			if math.Abs(got-rate) > 0.1*rate {
				t.Errorf("capped job %s: %.2f MiB/s, want 10 ± 1", capped.Jobs[0].Name, got/(1<<20))
			}
			freed := fair.Jobs[0].Bandwidth - got
			if gain := capped.Jobs[1].Bandwidth - fair.Jobs[1].Bandwidth; freed > 0 && gain < freed {
				t.Errorf("the capped job freed %.1f MiB/s, the other gained %.1f", freed/(1<<20), gain/(1<<20))
			}
			var out bytes.Buffer
			if err := experiment.WriteJobRows(&out, rows); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "Jain") || !strings.Contains(out.String(), "fifo+fair") {
				t.Errorf("table without its header or settings:\n%s", out.String())
			}
		})
	}
}
