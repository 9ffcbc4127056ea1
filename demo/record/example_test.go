package record_test

import (
	"fmt"

	"github.com/adaptio/adaptio/demo/record"
)

func ExampleRecorder_Since() {
	rec := record.New(record.Meta{Mode: "real", Nodes: 1})
	for t := 1; t <= 3; t++ {
		rec.AddSecond(record.Second{T: float64(t), Phase: "SS write"})
	}
	d := rec.Since(0, 0, 0, 0) // a dashboard's first poll
	fmt.Println(len(d.Seconds), d.Next)
	rec.AddSecond(record.Second{T: 4, Phase: "SS read"})
	d = rec.Since(d.Next[0], d.Next[1], d.Next[2], 0) // the next poll: only what is new
	fmt.Println(len(d.Seconds), d.Seconds[0].Phase)
	// Output:
	// 3 [3 0 0]
	// 1 SS read
}
