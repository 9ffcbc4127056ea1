// Package bandit implements the k-armed and contextual bandits the Council
// uses to learn, per access pattern, which TWINS window serves best
// (Bez et al., FGCS 2020 section IV), and the alternatives it is judged against.
//
// The papers' policy is "egreedy": value estimates start at zero and are
// incremental sample averages, Q <- Q + (R-Q)/N (Bez et al., FGCS 2020, Eq. 1); with
// probability Epsilon (0.15) a uniformly random arm is explored, otherwise
// the greedy arm is taken. Beside it: "greedy", "egreedy-decay" (decaying
// epsilon), "egreedy-step" (constant step size), "egreedy-window" (sliding
// window), "ucb1", "ucb1-discounted", "thompson" (Gaussian), "thompson-warm"
// (Gaussian, narrowed, after a warm-up of 3 rewards per arm),
// "thompson-warm-fav" (thompson-warm whose shared contexts first try each
// neighbour's favourite arm once, Options.TryFavourites), "thompson-np"
// (non-parametric: each arm's mean drawn as a Dirichlet re-weighting of its
// rewards, kept in a bounded histogram, and of the largest reward seen),
// "thompson-np-fav" (thompson-np with TryFavourites), "thompson-pool"
// (thompson-warm with each arm's variance shrunk toward the context's
// pooled variance and a floor of pulls growing like log t for arms that may
// still be the best), "thompson-pool-fav" (thompson-pool with
// TryFavourites) and "softmax";
// Options.Floor adds an exploration floor to any of them. Every Choice
// carries the probability with which its arm was chosen.
//
// Policies are pure state machines: randomness comes from the *rand.Rand
// passed to Select, there is no clock, no goroutine and no global state.
// State is versioned JSON (Marshal/Unmarshal, Contextual's MarshalJSON) so
// the Council can persist it.
//
// The usage loop:
//
//	c, _ := bandit.NewContextual("egreedy", len(windows), bandit.Options{})
//	for obs := range observations {
//		p := c.Policy(pattern(obs))      // or PolicyWith(key, features) to share across neighbours
//		p.Update(armOf(obs.Window), obs.Bandwidth)
//		choice := p.Select(rng)
//		apply(windows[choice.Arm])
//	}
//	state, _ := json.Marshal(c)          // persist; json.Unmarshal(state, c) restores
package bandit
