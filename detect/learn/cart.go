package learn

import (
	"math/rand/v2"
	"sort"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/detect"
)

// columns is training data in column-major form with per-feature sort
// orders, shared read-only by every tree grown from it.
type columns struct {
	x     [access.NumFeatures][]float64
	y     []uint8
	order [access.NumFeatures][]int32 // row indices sorted by feature value (ties by row)
}

func newColumns(X [][access.NumFeatures]float64, y []uint8) *columns {
	c := &columns{y: y}
	for f := range access.NumFeatures {
		col := make([]float64, len(X))
		ord := make([]int32, len(X))
		for i := range X {
			col[i] = X[i][f]
			ord[i] = int32(i)
		}
		sort.SliceStable(ord, func(a, b int) bool { return col[ord[a]] < col[ord[b]] })
		c.x[f], c.order[f] = col, ord
	}
	return c
}

// growNode is a node of a tree under construction.
type growNode struct {
	feat        int // -1: leaf
	thr         float64
	left, right int
	counts      [detect.NumClasses]float64 // training weight per class
	collapsed   bool                       // pruned: treat as a leaf
}

func (n *growNode) weight() float64 { return n.counts[0] + n.counts[1] + n.counts[2] }

// risk is the weight the node misclassifies as a leaf.
func (n *growNode) risk() float64 {
	return n.weight() - max(n.counts[0], n.counts[1], n.counts[2])
}

func (n *growNode) isLeaf() bool { return n.feat < 0 || n.collapsed }

// cartParams configures growth.
type cartParams struct {
	feats    []int // features a split may use (increasing indices)
	mtry     int   // features tried per split (len(feats): all)
	minLeaf  float64
	maxDepth int
}

// grower grows one CART tree (Gini impurity, binary splits at midpoints
// between distinct values) on the rows with positive weight, using the
// presorted orders: each node is a segment [lo, hi) of every feature's
// order, kept partitioned as the tree splits.
type grower struct {
	c      *columns
	w      []float64 // per-row weight (bootstrap count); 0: out of the sample
	idx    [access.NumFeatures][]int32
	goLeft []bool
	tmp    []int32
	rng    *rand.Rand // feature sampling when mtry < len(p.feats)
	p      cartParams
	nodes  []growNode
}

func newGrower(c *columns, w []float64, p cartParams, rng *rand.Rand) *grower {
	g := &grower{c: c, w: w, p: p, rng: rng, goLeft: make([]bool, len(c.y))}
	m := 0
	for _, v := range w {
		if v > 0 {
			m++
		}
	}
	for f := range access.NumFeatures {
		s := make([]int32, 0, m)
		for _, r := range c.order[f] {
			if w[r] > 0 {
				s = append(s, r)
			}
		}
		g.idx[f] = s
	}
	g.tmp = make([]int32, m)
	return g
}

// grow builds the tree and returns its nodes (root at 0).
func (g *grower) grow() []growNode {
	g.nodes = g.nodes[:0]
	g.split(0, len(g.idx[0]), 0)
	return g.nodes
}

func (g *grower) split(lo, hi, depth int) int {
	var counts [detect.NumClasses]float64
	for _, r := range g.idx[0][lo:hi] {
		counts[g.c.y[r]] += g.w[r]
	}
	id := len(g.nodes)
	g.nodes = append(g.nodes, growNode{feat: -1, counts: counts})
	n := g.nodes[id]
	tot := n.weight()
	if depth >= g.p.maxDepth || tot < 2*g.p.minLeaf || n.risk() == 0 {
		return id
	}
	parent := (counts[0]*counts[0] + counts[1]*counts[1] + counts[2]*counts[2]) / tot
	var buf [access.NumFeatures]int
	feats := buf[:copy(buf[:], g.p.feats)]
	if g.p.mtry < len(feats) {
		for i := len(feats) - 1; i > 0; i-- {
			j := g.rng.IntN(i + 1)
			feats[i], feats[j] = feats[j], feats[i]
		}
	}
	bestF, bestThr, bestScore := -1, 0.0, parent*(1+1e-12)
	for k, f := range feats {
		if k >= g.p.mtry && bestF >= 0 {
			break // sampled features found a split; otherwise keep trying others
		}
		col := g.c.x[f]
		seg := g.idx[f][lo:hi]
		var l [detect.NumClasses]float64
		lw := 0.0
		for i := 0; i < len(seg)-1; i++ {
			r := seg[i]
			l[g.c.y[r]] += g.w[r]
			lw += g.w[r]
			a, b := col[r], col[seg[i+1]]
			if a == b || lw < g.p.minLeaf {
				continue
			}
			rw := tot - lw
			if rw < g.p.minLeaf {
				break
			}
			r0, r1, r2 := counts[0]-l[0], counts[1]-l[1], counts[2]-l[2]
			score := (l[0]*l[0]+l[1]*l[1]+l[2]*l[2])/lw + (r0*r0+r1*r1+r2*r2)/rw
			if score > bestScore {
				thr := a + (b-a)/2
				if thr >= b {
					thr = a
				}
				bestF, bestThr, bestScore = f, thr, score
			}
		}
	}
	if bestF < 0 {
		return id
	}
	col := g.c.x[bestF]
	nl := 0
	for _, r := range g.idx[bestF][lo:hi] {
		left := col[r] <= bestThr
		g.goLeft[r] = left
		if left {
			nl++
		}
	}
	for f := range access.NumFeatures {
		seg := g.idx[f][lo:hi]
		a, b := 0, nl
		for _, r := range seg {
			if g.goLeft[r] {
				g.tmp[a] = r
				a++
			} else {
				g.tmp[b] = r
				b++
			}
		}
		copy(seg, g.tmp[:len(seg)])
	}
	left := g.split(lo, lo+nl, depth+1)
	right := g.split(lo+nl, hi, depth+1)
	g.nodes[id].feat, g.nodes[id].thr, g.nodes[id].left, g.nodes[id].right = bestF, bestThr, left, right
	return id
}

// ccpAlphas returns the increasing sequence of cost-complexity parameters at
// which weakest-link pruning collapses nodes (Breiman et al. 1984), starting
// with 0 and ending when the root is a leaf. Risk is in weight units.
// nodes is left unpruned.
func ccpAlphas(nodes []growNode) []float64 {
	for i := range nodes {
		nodes[i].collapsed = false
	}
	defer func() {
		for i := range nodes {
			nodes[i].collapsed = false
		}
	}()
	alphas := []float64{0}
	type sub struct {
		risk   float64
		leaves int
	}
	subs := make([]sub, len(nodes))
	var walk func(i int) sub
	walk = func(i int) sub {
		n := &nodes[i]
		if n.isLeaf() {
			subs[i] = sub{n.risk(), 1}
			return subs[i]
		}
		l, r := walk(n.left), walk(n.right)
		subs[i] = sub{l.risk + r.risk, l.leaves + r.leaves}
		return subs[i]
	}
	for !nodes[0].isLeaf() {
		walk(0)
		minG := -1.0
		for i := range nodes {
			if nodes[i].isLeaf() || !reachable(nodes, i) {
				continue
			}
			gv := (nodes[i].risk() - subs[i].risk) / float64(subs[i].leaves-1)
			if minG < 0 || gv < minG {
				minG = gv
			}
		}
		const eps = 1e-9
		for i := range nodes {
			if !nodes[i].isLeaf() && reachable(nodes, i) {
				if (nodes[i].risk()-subs[i].risk)/float64(subs[i].leaves-1) <= minG+eps {
					nodes[i].collapsed = true
				}
			}
		}
		if minG > alphas[len(alphas)-1] {
			alphas = append(alphas, minG)
		}
	}
	return alphas
}

// reachable reports whether node i is not below a collapsed node. Nodes are
// in preorder with parents before children, so a parent map is implicit;
// it walks from the root.
func reachable(nodes []growNode, i int) bool {
	j := 0
	for j != i {
		n := &nodes[j]
		if n.isLeaf() {
			return false
		}
		if i >= n.right {
			j = n.right
		} else {
			j = n.left
		}
	}
	return true
}

// pruneAt collapses nodes so the tree is the smallest subtree minimising
// risk + alpha * leaves.
func pruneAt(nodes []growNode, alpha float64) {
	for i := range nodes {
		nodes[i].collapsed = false
	}
	var cost func(i int) float64
	cost = func(i int) float64 {
		n := &nodes[i]
		leafCost := n.risk() + alpha
		if n.feat < 0 {
			return leafCost
		}
		sub := cost(n.left) + cost(n.right)
		if leafCost <= sub+1e-9 {
			n.collapsed = true
			return leafCost
		}
		return sub
	}
	cost(0)
}

// classify returns the class index a (possibly pruned) grown tree predicts.
func classify(nodes []growNode, x *[access.NumFeatures]float64) int {
	i := 0
	for !nodes[i].isLeaf() {
		if x[nodes[i].feat] <= nodes[i].thr {
			i = nodes[i].left
		} else {
			i = nodes[i].right
		}
	}
	c := nodes[i].counts
	best := 0
	for k := 1; k < detect.NumClasses; k++ {
		if c[k] > c[best] {
			best = k
		}
	}
	return best
}

// appendTree flattens a grown (possibly pruned) tree into f, breadth first
// with siblings adjacent, and returns the number of leaves added.
func appendTree(f *detect.Flat, nodes []growNode) int {
	newNode := func() int32 {
		f.Feature = append(f.Feature, 0)
		f.Threshold = append(f.Threshold, 0)
		f.Kid = append(f.Kid, 0)
		return int32(len(f.Feature) - 1)
	}
	root := newNode()
	f.Roots = append(f.Roots, root)
	type item struct {
		grow int
		flat int32
	}
	queue := []item{{0, root}}
	leaves := 0
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		n := &nodes[it.grow]
		if n.isLeaf() {
			var p [detect.NumClasses]float64
			w := n.weight()
			for k := range p {
				p[k] = n.counts[k] / w
			}
			f.Feature[it.flat], f.Kid[it.flat] = -1, int32(len(f.Leaves))
			f.Leaves = append(f.Leaves, p)
			leaves++
			continue
		}
		kid := newNode()
		newNode()
		f.Feature[it.flat], f.Threshold[it.flat], f.Kid[it.flat] = int32(n.feat), n.thr, kid
		queue = append(queue, item{n.left, kid}, item{n.right, kid + 1})
	}
	return leaves
}
