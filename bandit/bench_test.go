package bandit

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkSelectUpdate measures one decision and one update with 7 arms
// (the papers' windows) after 200 rewards, per policy.
func BenchmarkSelectUpdate(b *testing.B) {
	for _, name := range Names() {
		b.Run(name, func(b *testing.B) {
			p, _ := New(name, 7, Options{})
			rng := rand.New(rand.NewPCG(1, 1))
			for i := 0; i < 200; i++ {
				p.Update(i%7, 100+float64(i%7)+rng.NormFloat64())
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c := p.Select(rng)
				p.Update(c.Arm, 100+float64(c.Arm)+rng.NormFloat64())
			}
		})
	}
}

// BenchmarkContextualMarshal measures persisting 100 contexts.
func BenchmarkContextualMarshal(b *testing.B) {
	c, _ := NewContextual("egreedy", 7, Options{})
	for i := 0; i < 100; i++ {
		p := c.Policy(string(rune('A' + i)))
		p.Update(i%7, float64(i))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}
