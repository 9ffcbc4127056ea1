// Package councilbench measures the Council's time to decision (Bez et al., FGCS 2020, V-E,
// Fig. 11): N Announcers report every interval, in this process or in child
// processes over loopback NATS; each records the time from sending its
// report to receiving the round's decision.
//
//	res, err := councilbench.Run(ctx, councilbench.Config{Announcers: 768, Duration: 20 * time.Second})
//	fmt.Println(res.P50, res.P99, res.Max, res.ProcessingPerRound)
package councilbench
