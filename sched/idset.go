package sched

// idSet is a set of request ids: open addressing with linear probing and
// backward-shift deletion (no tombstones), so a steady stream of inserts and
// deletes neither allocates nor slows down. The zero value is empty.
type idSet struct {
	keys    []uint64 // 0 marks an empty slot; id 0 is kept in hasZero
	n       int
	hasZero bool
	shift   uint8
}

func (s *idSet) slot(id uint64) int { return int((id * 0x9e3779b97f4a7c15) >> s.shift) }

func (s *idSet) has(id uint64) bool {
	if id == 0 {
		return s.hasZero
	}
	if s.n == 0 {
		return false
	}
	mask := len(s.keys) - 1
	for i := s.slot(id); ; i = (i + 1) & mask {
		switch s.keys[i] {
		case id:
			return true
		case 0:
			return false
		}
	}
}

// add inserts id; it reports false if id was present.
func (s *idSet) add(id uint64) bool {
	if id == 0 {
		if s.hasZero {
			return false
		}
		s.hasZero = true
		return true
	}
	if 2*(s.n+1) > len(s.keys) {
		s.grow()
	}
	mask := len(s.keys) - 1
	for i := s.slot(id); ; i = (i + 1) & mask {
		switch s.keys[i] {
		case id:
			return false
		case 0:
			s.keys[i] = id
			s.n++
			return true
		}
	}
}

func (s *idSet) grow() {
	old := s.keys
	size := max(1024, 2*len(old))
	s.keys = make([]uint64, size)
	s.shift = uint8(64 - bitsLen(size-1))
	s.n = 0
	mask := size - 1
	for _, k := range old {
		if k == 0 {
			continue
		}
		i := s.slot(k)
		for s.keys[i] != 0 {
			i = (i + 1) & mask
		}
		s.keys[i] = k
		s.n++
	}
}

func bitsLen(x int) int {
	n := 0
	for x > 0 {
		n++
		x >>= 1
	}
	return n
}

// remove deletes id if present.
func (s *idSet) remove(id uint64) {
	if id == 0 {
		s.hasZero = false
		return
	}
	if s.n == 0 {
		return
	}
	mask := len(s.keys) - 1
	i := s.slot(id)
	for s.keys[i] != id {
		if s.keys[i] == 0 {
			return
		}
		i = (i + 1) & mask
	}
	// Backward shift: move later entries of the cluster into the hole when
	// their home slot does not lie cyclically in (hole, j].
	for j := (i + 1) & mask; s.keys[j] != 0; j = (j + 1) & mask {
		h := s.slot(s.keys[j])
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			s.keys[i] = s.keys[j]
			i = j
		}
	}
	s.keys[i] = 0
	s.n--
}
