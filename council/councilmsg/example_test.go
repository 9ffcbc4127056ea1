package councilmsg_test

import (
	"fmt"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/rw"
)

func Example() {
	s := councilmsg.Subjects{Prefix: "adaptio.rack7"}
	obs := access.Observation{Node: 3, Interval: time.Second, DataServers: 4, Clients: 2, Processes: 16,
		Op: rw.Write, FileHandles: 1, ReqAvg: 32768, ReqMin: 32768, ReqMax: 32768, OffsetDist: 524288, ProcDist: 32768,
		Sharers: 16, Bandwidth: 2.5e8, Bytes: 250000000, Requests: 7630, Window: time.Millisecond}
	b, _ := councilmsg.MarshalReport(councilmsg.Report{Instance: 7, Seq: 12, Round: 11, Obs: obs})
	fmt.Println(s.Report(3))
	fmt.Println(string(b))
	r, err := s.DecodeReport("adaptio.rack7.report.3", b)
	fmt.Println(r.Obs == obs, err)
	fmt.Println(string(councilmsg.MarshalDecision(councilmsg.Decision{Round: 12, Window: 250 * time.Microsecond, Prob: 0.87, Nodes: 4, Reason: "all"})))
	// Output:
	// adaptio.rack7.report.3
	// {"v":1,"node":3,"inst":7,"seq":12,"round":11,"start_ns":0,"ivl_ns":1000000000,"win_ns":1000000,"ds":4,"cl":2,"pr":16,"op":"write","fh":1,"ravg":32768,"rmin":32768,"rmax":32768,"odist":524288,"pdist":32768,"shr":16,"bw":2.5e+08,"bytes":250000000,"reqs":7630}
	// true <nil>
	// {"v":1,"round":12,"win_ns":250000,"explore":false,"prob":0.87,"nodes":4,"reason":"all"}
}
