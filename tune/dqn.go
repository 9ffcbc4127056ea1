package tune

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/adaptio/adaptio/tune/knob"
)

// DQNConfig tunes the CAPES-style deep-Q-network tuner. Zero values take
// the defaults in brackets.
type DQNConfig struct {
	Knobs    []knob.Knob   // default LustreKnobs()
	Interval time.Duration // one action per interval (1 s, as CAPES)
	History  int           // observations in the state (3)
	Hidden   int           // hidden units (32)
	Gamma    float64       // discount (0.9)
	Rate     float64       // learning rate (0.05)
	Batch    int           // minibatch (16)
	Replay   int           // replay buffer capacity (2,000)
	// Epsilon anneals linearly from 1 to EpsilonMin over EpsilonSteps
	// actions (0.05, 1,000).
	EpsilonMin   float64
	EpsilonSteps int
	TargetEvery  int // actions between copies of the network to the target network (50)
}

// DQN is a CAPES-style tuner (deep Q-learning): its state is the last
// History intervals' bandwidth, dirty bytes and RPC rate and the knobs'
// positions; its actions are no change or one knob doubled or halved;
// its reward the change in bandwidth. A small network (one hidden layer,
// tanh) estimates each action's value, trained from a replay buffer
// against a target network, choosing epsilon-greedily. Deterministic under
// its random source.
type DQN struct {
	cfg         DQNConfig
	knobs       []knob.Knob
	rng         *rand.Rand
	net, target mlp
	hist        []Observation
	replay      []transition
	next        int // replay ring position
	steps       int
	lastState   []float64
	lastAction  int
	lastBW      float64
	lastAt      time.Duration
	started     bool
	bwScale     float64 // running scale of the bandwidth, to normalise
}

type transition struct {
	s  []float64
	a  int
	r  float64
	s2 []float64
}

// NewDQN returns an untrained DQN tuner using rng.
func NewDQN(cfg DQNConfig, rng *rand.Rand) (*DQN, error) {
	if cfg.Knobs == nil {
		cfg.Knobs = LustreKnobs()
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	deff := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Second
	}
	def(&cfg.History, 3)
	def(&cfg.Hidden, 32)
	def(&cfg.Batch, 16)
	def(&cfg.Replay, 2000)
	def(&cfg.EpsilonSteps, 1000)
	def(&cfg.TargetEvery, 50)
	deff(&cfg.Gamma, 0.9)
	deff(&cfg.Rate, 0.05)
	deff(&cfg.EpsilonMin, 0.05)
	if len(cfg.Knobs) == 0 || cfg.History < 1 || cfg.Hidden < 1 || cfg.Batch < 1 || cfg.Replay < cfg.Batch || cfg.Gamma < 0 || cfg.Gamma >= 1 || cfg.Rate <= 0 || rng == nil {
		return nil, fmt.Errorf("%w: DQN %+v", ErrConfig, cfg)
	}
	if err := validKnobs(cfg.Knobs); err != nil {
		return nil, err
	}
	d := &DQN{cfg: cfg, knobs: append([]knob.Knob(nil), cfg.Knobs...), rng: rng}
	in := 3*cfg.History + len(cfg.Knobs)
	d.net = newMLP(in, cfg.Hidden, d.actions(), rng)
	d.target = d.net.clone()
	return d, nil
}

// Knobs returns the knobs at their current values.
func (d *DQN) Knobs() []knob.Knob { return append([]knob.Knob(nil), d.knobs...) }

// actions: 0 no change, 1+2i knob i doubled, 2+2i knob i halved.
func (d *DQN) actions() int { return 1 + 2*len(d.cfg.Knobs) }

// state encodes the observation history and the knobs' positions.
func (d *DQN) state() []float64 {
	s := make([]float64, 0, 3*d.cfg.History+len(d.knobs))
	for i := range d.cfg.History {
		var o Observation
		if k := len(d.hist) - 1 - i; k >= 0 {
			o = d.hist[k]
		}
		s = append(s, o.Bandwidth/d.bwScale, math.Log1p(float64(o.DirtyBytes))/40, math.Log1p(o.RPCRate)/20)
	}
	for _, k := range d.knobs {
		span := math.Log2(float64(k.Max) / float64(k.Min))
		pos := 0.0
		if span > 0 {
			pos = math.Log2(float64(k.Value)/float64(k.Min))/span*2 - 1
		}
		s = append(s, pos)
	}
	return s
}

// apply performs action a; it reports the setting made (ok false: none).
func (d *DQN) apply(a int) (Setting, bool) {
	if a == 0 {
		return Setting{}, false
	}
	i, dir := (a-1)/2, 1
	if (a-1)%2 == 1 {
		dir = -1
	}
	k := &d.knobs[i]
	if !k.Step(dir) {
		return Setting{}, false
	}
	return Setting{k.Name, k.Value}, true
}

// Step takes the interval's observation and, once per Interval, learns
// from the last action's reward and chooses the next.
func (d *DQN) Step(now time.Duration, o Observation) []Setting {
	if d.started && now-d.lastAt < d.cfg.Interval {
		return nil
	}
	d.bwScale = max(d.bwScale, o.Bandwidth, 1)
	d.hist = append(d.hist, o)
	if len(d.hist) > d.cfg.History {
		d.hist = d.hist[len(d.hist)-d.cfg.History:]
	}
	s := d.state()
	if d.started {
		r := (o.Bandwidth - d.lastBW) / d.bwScale
		d.remember(transition{d.lastState, d.lastAction, r, s})
		d.learn()
	}
	d.started, d.lastAt, d.lastBW = true, now, o.Bandwidth
	eps := max(d.cfg.EpsilonMin, 1-float64(d.steps)/float64(d.cfg.EpsilonSteps))
	d.steps++
	a := 0
	if d.rng.Float64() < eps {
		a = d.rng.IntN(d.actions())
	} else {
		q := d.net.forward(s, nil)
		for i := range q {
			if q[i] > q[a] {
				a = i
			}
		}
	}
	d.lastState, d.lastAction = s, a
	if st, ok := d.apply(a); ok {
		return []Setting{st}
	}
	return nil
}

func (d *DQN) remember(t transition) {
	if len(d.replay) < d.cfg.Replay {
		d.replay = append(d.replay, t)
		return
	}
	d.replay[d.next] = t
	d.next = (d.next + 1) % d.cfg.Replay
}

// learn trains the network on a minibatch against the target network.
func (d *DQN) learn() {
	if len(d.replay) < d.cfg.Batch {
		return
	}
	for range d.cfg.Batch {
		t := d.replay[d.rng.IntN(len(d.replay))]
		q2 := d.target.forward(t.s2, nil)
		best := q2[0]
		for _, v := range q2 {
			best = max(best, v)
		}
		y := t.r + d.cfg.Gamma*best
		d.net.train(t.s, t.a, y, d.cfg.Rate/float64(d.cfg.Batch))
	}
	if d.steps%d.cfg.TargetEvery == 0 {
		d.target = d.net.clone()
	}
}

// mlp is a one-hidden-layer network: tanh hidden units, linear outputs.
type mlp struct {
	in, hidden, out int
	w1, b1, w2, b2  []float64
}

func newMLP(in, hidden, out int, rng *rand.Rand) mlp {
	m := mlp{in: in, hidden: hidden, out: out, w1: make([]float64, in*hidden), b1: make([]float64, hidden),
		w2: make([]float64, hidden*out), b2: make([]float64, out)}
	s1, s2 := 1/math.Sqrt(float64(in)), 1/math.Sqrt(float64(hidden))
	for i := range m.w1 {
		m.w1[i] = s1 * (2*rng.Float64() - 1)
	}
	for i := range m.w2 {
		m.w2[i] = s2 * (2*rng.Float64() - 1)
	}
	return m
}

func (m mlp) clone() mlp {
	c := m
	c.w1, c.b1, c.w2, c.b2 = append([]float64(nil), m.w1...), append([]float64(nil), m.b1...), append([]float64(nil), m.w2...), append([]float64(nil), m.b2...)
	return c
}

// forward returns the outputs; h, if not nil, receives the hidden units.
func (m mlp) forward(x []float64, h []float64) []float64 {
	if h == nil {
		h = make([]float64, m.hidden)
	}
	for j := range m.hidden {
		v := m.b1[j]
		for i := range m.in {
			v += m.w1[j*m.in+i] * x[i]
		}
		h[j] = math.Tanh(v)
	}
	out := make([]float64, m.out)
	for k := range m.out {
		v := m.b2[k]
		for j := range m.hidden {
			v += m.w2[k*m.hidden+j] * h[j]
		}
		out[k] = v
	}
	return out
}

// train takes one gradient step on (output a - y)^2 / 2.
func (m mlp) train(x []float64, a int, y, rate float64) {
	h := make([]float64, m.hidden)
	q := m.forward(x, h)
	e := max(min(q[a]-y, 1), -1) // Huber-like clipping, as DQN does
	for j := range m.hidden {
		g := e * m.w2[a*m.hidden+j] * (1 - h[j]*h[j])
		m.w2[a*m.hidden+j] -= rate * e * h[j]
		for i := range m.in {
			m.w1[j*m.in+i] -= rate * g * x[i]
		}
		m.b1[j] -= rate * g
	}
	m.b2[a] -= rate * e
}

// Clone returns a copy of d that keeps what it learnt (network, target
// network, replay buffer, step count and so its epsilon, bandwidth scale)
// and starts a new run: knobs at the given values (the target's, same
// names and ranges as d's), no history, drawing from rng.
func (d *DQN) Clone(knobs []knob.Knob, rng *rand.Rand) (*DQN, error) {
	if len(knobs) != len(d.knobs) {
		return nil, fmt.Errorf("%w: %d knobs for a DQN of %d", ErrConfig, len(knobs), len(d.knobs))
	}
	for i, k := range knobs {
		if k.Name != d.knobs[i].Name || k.Min != d.knobs[i].Min || k.Max != d.knobs[i].Max {
			return nil, fmt.Errorf("%w: knob %+v for a DQN trained on %+v", ErrConfig, k, d.knobs[i])
		}
	}
	if err := validKnobs(knobs); err != nil {
		return nil, err
	}
	c := *d
	c.rng = rng
	c.knobs = append([]knob.Knob(nil), knobs...)
	c.net, c.target = d.net.clone(), d.target.clone()
	c.replay = append([]transition(nil), d.replay...) // transitions are never changed in place
	c.hist, c.lastState, c.started = nil, nil, false
	return &c, nil
}

// Steps is the number of actions d has chosen.
func (d *DQN) Steps() int { return d.steps }
