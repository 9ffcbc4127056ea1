package service_test

import (
	"fmt"
	"os"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/service"
)

func Example() {
	dir, _ := os.MkdirTemp("", "council-example-*")
	defer os.RemoveAll(dir)
	s, err := service.New(service.Options{Prefix: "adaptio.rack7", Port: -1, StateDir: dir, Core: council.Config{Nodes: 4}})
	if err != nil {
		panic(err)
	}
	if err := s.Start(); err != nil {
		panic(err)
	}
	defer s.Shutdown()
	sub := s.Subjects()
	fmt.Println(sub.Reports(), sub.Decision())
	st := s.Status()
	fmt.Println("round", st.Round, "window", st.Window, "policy", st.Policy)
	// Output:
	// adaptio.rack7.report.* adaptio.rack7.decision
	// round 0 window 1ms policy thompson-pool
}
