package council_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/rw"
)

// sharedStrided is a stand-in detector: every busy interval is SS.
type sharedStrided struct{}

func (sharedStrided) Detect(access.Observation) (access.Class, [3]float64) {
	return access.SS, [3]float64{0, 0, 1}
}

func Example() {
	c, err := council.New(council.Config{Nodes: 2, Policy: "greedy", Detector: sharedStrided{}}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(err)
	}
	report := func(node int, seq uint64, op rw.Op, bw float64) council.Report {
		return council.Report{Instance: uint64(node + 1), Seq: seq, Obs: access.Observation{
			Node: node, Interval: time.Second, Processes: 16, Op: op, FileHandles: 1,
			ReqAvg: 32 << 10, ReqMin: 32 << 10, ReqMax: 32 << 10, Bandwidth: bw, Bytes: int64(bw), Requests: 100,
			Window: c.Window(), // the window in force during the interval
		}}
	}
	now := time.Second
	c.Observe(now, report(0, 1, rw.Write, 2e8))
	if _, ok, wakeAt := c.Poll(now); !ok {
		fmt.Println("waiting for node 1 until", wakeAt)
	}
	c.Observe(now+time.Millisecond, report(1, 1, rw.Write, 3e8))
	d, _, _ := c.Poll(now + time.Millisecond)
	fmt.Println("round", d.Round, "closed by", d.Reason, "credit", d.Credit)
	fmt.Println("node 1:", d.Nodes[1].Context, "reward", d.Nodes[1].Reward, "under", d.Nodes[1].Window)
	pulls := func() (n int64) {
		for _, ctx := range c.Status().Contexts {
			for _, x := range ctx.Counts {
				n += x
			}
		}
		return n
	}
	// The rounds in which a context runs one window are one pull, credited
	// when a round closes that does not extend it.
	fmt.Println("pulls after round 1:", pulls())
	next := func(op rw.Op) {
		now += time.Second
		seq := d.Round + 1
		c.Observe(now, report(0, seq, op, 2e8))
		c.Observe(now, report(1, seq, op, 3e8))
		d, _, _ = c.Poll(now)
		for _, p := range d.Pulls {
			fmt.Println("round", d.Round, "pull:", p.Context, "under", p.Window, "set aside:", p.Skipped != "")
		}
		fmt.Printf("pulls after round %d: %d\n", d.Round, pulls())
	}
	// Round 1 was the phase's first interval, and the Council chose another
	// window after it: alone, that interval measures the turn between
	// phases, not the window, and is set aside.
	next(rw.Write)
	// The writes end: round 2's pull is credited.
	next(rw.Read)
	// Output:
	// waiting for node 1 until 1.5s
	// round 1 closed by all credit phase
	// node 1: SS/write reward 3e+08 under 1ms
	// pulls after round 1: 0
	// round 2 pull: SS/write under 1ms set aside: true
	// pulls after round 2: 0
	// round 3 pull: SS/write under 4ms set aside: false
	// pulls after round 3: 1
}
