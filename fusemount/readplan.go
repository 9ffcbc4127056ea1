package fusemount

// readPlan is the prefetcher's decision core (prefetch.go): from the reads
// of one file by all the processes reading it on this mount, it tells
// whether a read continues a sequential stream and how far ahead of it to
// have the file loaded. It is a pure state machine: no clock, no I/O, no
// goroutines; the caller serialises its calls.
//
// A stream is a run of reads each starting near where the stream's reads
// so far end: within readPlanStride times the larger of the read's size
// and the stream's last read's, either way. 8 processes reading one file
// in turn (1D-strided, each rank's request after the previous rank's) form
// one stream whose reads arrive slightly out of order; 8 processes each
// reading their own contiguous segment form 8 streams. Through the page
// cache the reads are the kernel's readahead requests of the processes'
// descriptors, larger and fewer. A read continues the stream whose end is
// nearest; a read near none starts a new stream, replacing the least
// recently used once readPlanStreams are tracked.
//
// A stream is sequential, and prefetches, once its end moved forward
// readPlanRun times and its reads cover at least two thirds of the bytes
// below its end, over the last readPlanSpan to twice that reads' sizes
// (older reads count in proportion). Random reads that land near a stream
// spread it much wider than they cover, and reads going backwards never
// move its end: neither prefetches. A stream prefetches at most up to the
// lowest offset of the next stream ahead of it: the bytes from there on
// are that stream's to read (8 ranks' segments), and likely read already.
type readPlan struct {
	ahead   int64 // bytes to have loaded past a sequential stream's end
	streams []readStream
	clock   uint64
}

// readStream is one sequence of reads.
type readStream struct {
	origin     int64  // the lowest byte its reads reached
	start, end int64  // the window of its density: start (origin or later) to the furthest byte read plus one
	bytes      int64  // bytes its reads asked for
	size       int64  // its last read's size
	advances   int    // reads that moved end forward
	used       uint64 // clock of its last read (least recently used goes first)
}

const (
	readPlanStreams = 16 // streams tracked per file
	readPlanStride  = 16 // how far (in reads' sizes) a read may land from a stream's end and continue it
	readPlanRun     = 2  // forward moves of a stream before it prefetches
	readPlanSpan    = 64 // the reads' sizes over which a stream's density is measured
)

// newReadPlan returns a plan that keeps ahead bytes loaded past the end of
// each sequential stream.
func newReadPlan(ahead int64) *readPlan { return &readPlan{ahead: ahead} }

// read records a read of n bytes at off and returns the end of the range
// to have loaded: past off+n when the read belongs to a sequential stream
// (the caller fetches [off, until), clipped to the file), or until <= off+n
// when it does not (fetch nothing beyond the read).
func (p *readPlan) read(off, n int64) (until int64) {
	if n <= 0 || off < 0 {
		return off
	}
	p.clock++
	end := off + n
	best, dist := -1, int64(0)
	for i := range p.streams {
		s := &p.streams[i]
		d := off - s.end
		if d < 0 {
			d = -d
		}
		if d <= readPlanStride*max(n, s.size) && (best < 0 || d < dist) {
			best, dist = i, d
		}
	}
	if best < 0 {
		s := readStream{origin: off, start: off, end: end, bytes: n, size: n, used: p.clock}
		if len(p.streams) < readPlanStreams {
			p.streams = append(p.streams, s)
		} else {
			p.streams[p.lru()] = s
		}
		return off
	}
	s := &p.streams[best]
	if end > s.end {
		s.end = end
		s.advances++
	}
	s.start = min(s.start, off)
	s.origin = min(s.origin, off)
	s.bytes += n
	s.size = n
	s.used = p.clock
	if span, w := s.end-s.start, readPlanSpan*n; span > 2*w {
		// Keep the last w bytes' worth: the density is the recent reads'.
		s.bytes = s.bytes * w / span
		s.start = s.end - w
	}
	if s.advances < readPlanRun || 3*s.bytes < 2*(s.end-s.start) {
		return off
	}
	until = s.end + p.ahead
	for i := range p.streams {
		if o := &p.streams[i]; i != best && o.origin >= s.end && o.origin < until {
			until = o.origin // another stream reads from there on
		}
	}
	return until
}

// lru is the index of the least recently used stream.
func (p *readPlan) lru() int {
	k := 0
	for i := range p.streams {
		if p.streams[i].used < p.streams[k].used {
			k = i
		}
	}
	return k
}

// reset forgets every stream (the file changed, or its last reader left).
func (p *readPlan) reset() { p.streams = p.streams[:0] }
