package council

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/rw"
)

// BenchmarkObserve is the core's cost per report with the default detector.
func BenchmarkObserve(b *testing.B) {
	c, err := New(Config{}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		b.Fatal(err)
	}
	o := obs(0, access.SS, rw.Write, c.Window(), 1e8)
	o.FileHandles, o.OffsetDist, o.ProcDist = 1, 64*32768, 64*32768
	seq := uint64(0)
	for b.Loop() {
		seq++
		o.Node = int(seq % 768)
		if err := c.Observe(time.Duration(seq), Report{Instance: 1 + uint64(o.Node), Seq: seq, Obs: o}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRound768 is one full round of 768 reports: decode, observe, decide.
func BenchmarkRound768(b *testing.B) {
	c, err := New(Config{Nodes: 768}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([][]byte, 768)
	seq := uint64(0)
	for b.Loop() {
		seq++
		for n := range msgs {
			o := obs(n, access.Classes[n%3], rw.Write, c.Window(), 1e8)
			o.FileHandles = []int{64, 1, 1}[n%3]
			msgs[n], _ = councilmsg.AppendReport(msgs[n][:0], councilmsg.Report{Instance: 1, Seq: seq, Obs: o})
		}
		for _, m := range msgs {
			r, err := councilmsg.UnmarshalReport(m)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Observe(0, r); err != nil {
				b.Fatal(err)
			}
		}
		if _, ok, _ := c.Poll(0); !ok {
			b.Fatal("round not closed")
		}
	}
}
