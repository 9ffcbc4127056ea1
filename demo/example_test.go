package demo_test

import (
	"fmt"

	"github.com/adaptio/adaptio/demo"
)

func ExampleConfig_Phases() {
	cfg := demo.Config{Mix: true}.WithDefaults()
	for _, p := range cfg.Phases() {
		fmt.Println(p.Name, p.Pattern)
	}
	// Output:
	// SS write 128p-shared-strided-write-32k-256m
	// SS read 128p-shared-strided-read-32k-256m
	// FPP write 128p-fpp-contiguous-write-32k-32m
	// SC read 128p-shared-contiguous-read-32k-256m
}
