package detect_test

import (
	"fmt"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/detect"
	"github.com/adaptio/adaptio/rw"
)

// Detect the pattern of one interval with the embedded model.
func ExampleModel_Detect() {
	obs := access.Observation{
		Requests: 1024, Bytes: 1024 * 32 << 10, Op: rw.Write,
		FileHandles: 32, // one file per process
		ReqAvg:      32 << 10, ReqMin: 32 << 10, ReqMax: 32 << 10,
		OffsetDist: 32 << 10,
	}
	class, probs := detect.Default().Detect(obs)
	fmt.Println(class, obs.Op, probs[class.Index()] > 0.5)
	// Output: FPP write true
}

// Smooth a node's detections over consecutive intervals: one atypical
// interval does not flip the pattern.
func ExampleSmoother() {
	s, _ := detect.NewSmoother(0.4)
	strided := [3]float64{0, 0.05, 0.95}
	contiguous := [3]float64{0, 0.95, 0.05}
	for _, p := range [][3]float64{strided, strided, contiguous, strided} {
		c, _ := s.Update(7, p) // node 7's probabilities, as Model.Detect returns them
		fmt.Print(c, " ")
	}
	fmt.Println()
	// Output: SS SS SS SS
}
