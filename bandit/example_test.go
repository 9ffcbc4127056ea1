package bandit_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/adaptio/adaptio/bandit"
)

// The papers' policy learns which of three windows gives the most bandwidth.
func ExampleNew() {
	p, _ := bandit.New("egreedy", 3, bandit.Options{Epsilon: 0.15})
	rng := rand.New(rand.NewPCG(1, 2))
	bandwidth := []float64{300, 500, 400} // MiB/s per arm
	for range 200 {
		c := p.Select(rng)
		p.Update(c.Arm, bandwidth[c.Arm]+rng.NormFloat64()*20)
	}
	fmt.Println("best arm:", p.Best())
	c := p.Select(rng)
	fmt.Printf("P(choose arm %d) = %.2f\n", c.Arm, c.Prob)
	// Output:
	// best arm: 1
	// P(choose arm 1) = 0.90
}

// One bandit per access pattern; state persists as JSON.
func ExampleContextual() {
	c, _ := bandit.NewContextual("thompson", 2, bandit.Options{})
	c.Policy("SS-write").Update(0, 120)
	c.Policy("FPP-read").Update(1, 80)
	data, _ := json.Marshal(c)
	var restored bandit.Contextual
	if err := json.Unmarshal(data, &restored); err != nil {
		fmt.Println(err)
	}
	fmt.Println(restored.Contexts(), restored.Policy("SS-write").Counts())
	// Output: [FPP-read SS-write] [1 0]
}

// A new context starts from what its nearest known neighbours learned.
func ExampleContextual_PolicyWith() {
	c, _ := bandit.NewContextual("egreedy", 4, bandit.Options{Neighbors: 3})
	// features: log2(processes), log2(request KiB)
	known := c.PolicyWith("512p-32k", []float64{9, 5})
	for i := range 40 {
		known.Update(i%4, []float64{100, 180, 240, 200}[i%4])
	}
	fresh := c.PolicyWith("512p-64k", []float64{9, 6})
	fmt.Println("first choice of the new context:", fresh.Best())
	// Output: first choice of the new context: 2
}

func ExampleMarshal() {
	p, _ := bandit.New("ucb1", 2, bandit.Options{})
	p.Update(0, 1)
	data, _ := bandit.Marshal(p)
	fmt.Println(string(data))
	q, _ := bandit.Unmarshal(data)
	fmt.Println(q.Name(), q.Counts())
	// Output:
	// {"version":1,"policy":"ucb1","arms":2,"options":{"exploration":0.5,"prior_weight":2},"t":1,"scale":1,"state":[{"n":1,"w":1,"q":1,"v":0},{"n":0,"w":0,"q":0,"v":0}]}
	// ucb1 [1 0]
}
