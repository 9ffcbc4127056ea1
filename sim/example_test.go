package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/workload"
)

// Run an experiment and change every I/O node's TWINS window after the
// first simulated second.
func ExampleRun() {
	p := workload.Pattern{Processes: 128, Layout: workload.Shared, Spatiality: workload.Strided,
		Op: rw.Read, RequestSize: 32 << 10, TotalBytes: 512 << 20}
	intervals := 0
	res, err := sim.Run(context.Background(), sim.Config{Patterns: []workload.Pattern{p}, IONodes: 4},
		sim.Hooks{OnInterval: func(now time.Duration, obs []access.Observation) (time.Duration, bool) {
			intervals++
			return 4 * time.Millisecond, true
		}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Bytes == 512<<20, intervals > 0, res.Makespan > 0)
	// Output: true true true
}

// Step through an experiment one simulated second at a time.
func ExampleSim_Step() {
	p := workload.Pattern{Processes: 64, Layout: workload.FilePerProcess, Spatiality: workload.Contiguous,
		Op: rw.Write, RequestSize: 256 << 10, TotalBytes: 256 << 20}
	s, _ := sim.New(sim.Config{Patterns: []workload.Pattern{p}, IONodes: 2}, nil)
	var files int
	for {
		obs, done, err := s.Step()
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, o := range obs {
			files = max(files, o.FileHandles)
		}
		if done {
			break
		}
	}
	fmt.Println("file handles seen by one I/O node:", files)
	// Output: file handles seen by one I/O node: 32
}
