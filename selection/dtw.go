// Package selection chooses the I/O node's scheduling algorithm itself
// (the JLESC AGIOS selection report, AGIOS's dynamic scheduler selection): an armed bandit over the
// schedulers, and a knowledge base of access patterns, matched with
// FastDTW over the shapes of their offset-difference series, whose Markov chain
// predicts the next pattern and so the scheduler to run. The cores are
// pure: time and randomness are passed in.
package selection

import "math"

// DTW is the exact dynamic time warping distance between a and b with
// the cost |a_i - b_j| (O(len(a) x len(b)) time, O(len(b)) memory): the
// reference FastDTW is measured against.
func DTW(a, b []float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		if len(a) == len(b) {
			return 0
		}
		return math.Inf(1)
	}
	prev := make([]float64, len(b)+1)
	cur := make([]float64, len(b)+1)
	for j := range prev {
		prev[j] = math.Inf(1)
	}
	prev[0] = 0
	for i := 1; i <= len(a); i++ {
		cur[0] = math.Inf(1)
		for j := 1; j <= len(b); j++ {
			cur[j] = math.Abs(a[i-1]-b[j-1]) + min(prev[j-1], prev[j], cur[j-1])
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// cell is a position of the warping matrix.
type cell struct{ i, j int }

// FastDTW approximates DTW in linear time (Salvador and Chan's
// algorithm): it warps half-resolution copies of the series recursively,
// projects that warping path to the full resolution, widens it by radius
// cells on every side and runs DTW inside that window only. With radius
// >= max(len) it is exact; its result is never below DTW's.
func FastDTW(a, b []float64, radius int) float64 {
	var w dtwWork
	return w.fast(a, b, radius)
}

// dtwWork holds FastDTW's buffers, reused from one comparison to the
// next (the knowledge base compares a period with many patterns).
type dtwWork struct {
	cost  []float64
	start []int
	span  [][2]int
	path  []cell
	halfs [][]float64 // per recursion level: the halved a and b
	// limit, if finite, abandons the full-resolution DTW once every cell
	// of a row costs more (its result is then +Inf): a comparison that
	// cannot beat the best one found so far stops early.
	limit float64
}

// fast is FastDTW with w's buffers.
func (w *dtwWork) fast(a, b []float64, radius int) float64 {
	return w.fastWithin(a, b, radius, math.Inf(1))
}

// fastWithin is fast, abandoned (+Inf) once the distance must exceed
// limit.
func (w *dtwWork) fastWithin(a, b []float64, radius int, limit float64) float64 {
	w.limit = math.Inf(1)
	d, _ := w.level(a, b, max(radius, 0), 0, limit)
	return d
}

func (w *dtwWork) level(a, b []float64, radius, depth int, limit float64) (float64, []cell) {
	minSize := radius + 2
	if len(a) <= minSize || len(b) <= minSize {
		w.limit = limit
		d, p := w.window(a, b, nil)
		w.limit = math.Inf(1)
		return d, p
	}
	for len(w.halfs) < 2*(depth+1) {
		w.halfs = append(w.halfs, nil)
	}
	ha, hb := halveInto(w.halfs[2*depth][:0], a), halveInto(w.halfs[2*depth+1][:0], b)
	w.halfs[2*depth], w.halfs[2*depth+1] = ha, hb
	_, path := w.level(ha, hb, radius, depth+1, math.Inf(1))
	span := w.expand(path, len(a), len(b), radius)
	w.limit = limit
	d, p := w.window(a, b, span)
	w.limit = math.Inf(1)
	return d, p
}

// halveInto appends to out the averages of x's consecutive pairs (an odd
// last point stays as it is).
func halveInto(out, x []float64) []float64 {
	for i := 0; i+1 < len(x); i += 2 {
		out = append(out, (x[i]+x[i+1])/2)
	}
	if len(x)%2 == 1 {
		out = append(out, x[len(x)-1])
	}
	return out
}

// expand projects a low-resolution path to full resolution (each cell
// covers a 2x2 block) and widens it by radius: for every row of the
// full-resolution matrix, the span of columns the window allows.
func (w *dtwWork) expand(path []cell, n, m, radius int) [][2]int {
	if cap(w.span) < n {
		w.span = make([][2]int, n)
	}
	span := w.span[:n]
	for i := range span {
		span[i] = [2]int{m, -1}
	}
	mark := func(i, j int) {
		for di := -radius; di <= radius; di++ {
			r := i + di
			if r < 0 || r >= n {
				continue
			}
			lo, hi := max(j-radius, 0), min(j+radius, m-1)
			span[r][0], span[r][1] = min(span[r][0], lo), max(span[r][1], hi)
		}
	}
	for _, c := range path {
		for di := range 2 {
			for dj := range 2 {
				if i, j := 2*c.i+di, 2*c.j+dj; i < n && j < m {
					mark(i, j)
				}
			}
		}
	}
	// Keep the window connected: each row reaches at least where the
	// previous one ended.
	for i := 1; i < n; i++ {
		if span[i][0] > span[i-1][1] {
			span[i][0] = span[i-1][1]
		}
	}
	span[0][0], span[n-1][1] = 0, m-1
	return span
}

// windowDTW runs DTW over the cells of span (nil: every cell) and returns
// the distance and the warping path.
func (w *dtwWork) window(a, b []float64, span [][2]int) (float64, []cell) {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		if n == m {
			return 0, nil
		}
		return math.Inf(1), nil
	}
	if span == nil {
		if cap(w.span) < n {
			w.span = make([][2]int, n)
		}
		span = w.span[:n]
		for i := range span {
			span[i] = [2]int{0, m - 1}
		}
	}
	// The window's costs, row after row in one array; cost(i, j) outside
	// the window is +Inf.
	if cap(w.start) < n+1 {
		w.start = make([]int, n+1)
	}
	start := w.start[:n+1]
	start[0] = 0
	for i := range n {
		start[i+1] = start[i] + span[i][1] - span[i][0] + 1
	}
	if cap(w.cost) < start[n] {
		w.cost = make([]float64, start[n])
	}
	cost := w.cost[:start[n]]
	at := func(i, j int) float64 {
		if i < 0 || j < 0 || j < span[i][0] || j > span[i][1] {
			if i < 0 && j < 0 {
				return 0
			}
			return math.Inf(1)
		}
		return cost[start[i]+j-span[i][0]]
	}
	inf := math.Inf(1)
	for i := range n {
		lo, hi := span[i][0], span[i][1]
		row := cost[start[i]:start[i+1]]
		var prow []float64
		plo, phi := 0, -1
		if i > 0 {
			prow, plo, phi = cost[start[i-1]:start[i]], span[i-1][0], span[i-1][1]
		}
		ai := a[i]
		rowMin := inf
		for j := lo; j <= hi; j++ {
			best := inf
			switch {
			case i == 0 && j == 0:
				best = 0
			case i > 0:
				if j-1 >= plo && j-1 <= phi {
					best = prow[j-1-plo]
				}
				if j >= plo && j <= phi && prow[j-plo] < best {
					best = prow[j-plo]
				}
			}
			if j > lo && row[j-lo-1] < best {
				best = row[j-lo-1]
			}
			row[j-lo] = math.Abs(ai-b[j]) + best
			rowMin = min(rowMin, row[j-lo])
		}
		if rowMin > w.limit { // every path from here costs more
			return inf, nil
		}
	}
	// The path back from the last cell.
	path := w.path[:0]
	for i, j := n-1, m-1; ; {
		path = append(path, cell{i, j})
		if i == 0 && j == 0 {
			break
		}
		di, dj := i-1, j-1
		best := at(i-1, j-1)
		if v := at(i-1, j); v < best {
			di, dj, best = i-1, j, v
		}
		if v := at(i, j-1); v < best {
			di, dj = i, j-1
		}
		if di < 0 || dj < 0 { // along the first row or column
			di, dj = max(di, 0), max(dj, 0)
			if i == 0 {
				di, dj = 0, j-1
			} else if j == 0 {
				di, dj = i-1, 0
			}
		}
		i, j = di, dj
	}
	for l, r := 0, len(path)-1; l < r; l, r = l+1, r-1 {
		path[l], path[r] = path[r], path[l]
	}
	w.path = path
	return at(n-1, m-1), path
}
