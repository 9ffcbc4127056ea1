package spill

import (
	"cmp"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

type rec struct{ key, seq int64 }

func cmpRec(a, b rec) int { return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.seq, b.seq)) }

var codec = Codec[rec]{Size: 16,
	Put: func(b []byte, r rec) {
		binary.LittleEndian.PutUint64(b, uint64(r.key))
		binary.LittleEndian.PutUint64(b[8:], uint64(r.seq))
	},
	Get: func(b []byte) rec {
		return rec{int64(binary.LittleEndian.Uint64(b)), int64(binary.LittleEndian.Uint64(b[8:]))}
	},
}

// Whatever the chunk, Each gives the records in the order a plain sort
// gives them; Spilled says whether runs were written.
func TestSortedAsInMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var in []rec
	for i := range 10_000 {
		in = append(in, rec{key: rng.Int64N(300), seq: int64(i)})
	}
	want := slices.SortedFunc(slices.Values(in), cmpRec)
	for _, chunk := range []int{97, 1000, 10_000, 1 << 20} {
		s := New(chunk, cmpRec, codec, "test records")
		for _, r := range in {
			if err := s.Add(r); err != nil {
				t.Fatal(err)
			}
		}
		if spilled := s.Spilled(); spilled != (chunk <= 10_000) || s.Len() != int64(len(in)) {
			t.Errorf("chunk %d: spilled %v, %d records", chunk, spilled, s.Len())
		}
		var got []rec
		if err := s.Each(func(r rec) error { got = append(got, r); return nil }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("chunk %d: records out of order", chunk)
		}
	}
}

// Each stops at its callback's first error and returns it.
func TestEachStopsAtAnError(t *testing.T) {
	stop := errors.New("stop")
	for _, chunk := range []int{3, 100} {
		s := New(chunk, cmpRec, codec, "test records")
		for i := range 10 {
			s.Add(rec{key: int64(i)})
		}
		n := 0
		err := s.Each(func(rec) error {
			if n++; n == 4 {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || n != 4 {
			t.Errorf("chunk %d: %v after %d records, want stop after 4", chunk, err, n)
		}
	}
}
