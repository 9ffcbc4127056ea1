package ring

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// The ring behaves as a plain slice used as a queue, across growth and wrap-around.
func TestRingMatchesSlice(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var q Ring[int]
		var ref []int
		next := 0
		for range rapid.IntRange(0, 300).Draw(t, "ops") {
			switch op := rapid.IntRange(0, 3).Draw(t, "op"); {
			case op <= 1 || len(ref) == 0:
				q.Push(next)
				ref = append(ref, next)
				next++
			case op == 2:
				if got, want := q.Pop(), ref[0]; got != want {
					t.Fatalf("Pop = %d, want %d", got, want)
				}
				ref = ref[1:]
			default:
				i := rapid.IntRange(0, len(ref)-1).Draw(t, "i")
				if got, want := q.Remove(i), ref[i]; got != want {
					t.Fatalf("Remove(%d) = %d, want %d", i, got, want)
				}
				ref = slices.Delete(ref, i, i+1)
			}
			if q.Len() != len(ref) {
				t.Fatalf("Len = %d, want %d", q.Len(), len(ref))
			}
			for i, want := range ref {
				if got := *q.At(i); got != want {
					t.Fatalf("At(%d) = %d, want %d", i, got, want)
				}
			}
			if len(ref) > 0 && *q.Peek() != ref[0] {
				t.Fatalf("Peek = %d, want %d", *q.Peek(), ref[0])
			}
		}
		q.Clear()
		if q.Len() != 0 {
			t.Fatal("Clear left elements")
		}
	})
}

func TestSteadyStateAllocatesNothing(t *testing.T) {
	var q Ring[int]
	for i := range 100 {
		q.Push(i)
	}
	if n := testing.AllocsPerRun(1000, func() { q.Push(q.Pop()) }); n != 0 {
		t.Fatalf("%v allocations per push+pop, want 0", n)
	}
}
