package announce_test

import (
	"context"
	"fmt"
	"time"

	"github.com/adaptio/adaptio/announce"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/council/service"
)

func Example() {
	// A Council for one I/O node, with its embedded NATS server on a free port.
	c, _ := service.New(service.Options{Port: -1, Core: council.Config{Nodes: 1, Detector: fpp{}}})
	if err := c.Start(); err != nil {
		panic(err)
	}
	defer c.Shutdown()

	d := &daemon{} // the forwarding daemon: Source and Applier
	decided := make(chan councilmsg.Decision, 16)
	a, _ := announce.New(announce.Options{URL: c.ClientURL(), Node: 0, Interval: 10 * time.Millisecond,
		Source: d, Applier: d, OnDecision: func(dec councilmsg.Decision, _ time.Duration) { decided <- dec }})
	if err := a.Start(context.Background()); err != nil {
		panic(err)
	}
	defer a.Shutdown()
	dec := <-decided
	fmt.Println("round", dec.Round, "from", dec.Nodes, "node; applied:", a.Window() == dec.Window)
	// Output: round 1 from 1 node; applied: true
}
