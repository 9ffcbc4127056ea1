package sched

import (
	"testing"

	"github.com/adaptio/adaptio/rw"
)

func TestAccessJoinsOnlyWhatContinuesIt(t *testing.T) {
	start := Batch{Queue: 1, File: 7, Op: rw.Write, Offset: 1 << 20, Length: 64 << 10}
	for _, tt := range []struct {
		name string
		b    Batch
		n    int
		want bool
	}{
		{"just after", Batch{Queue: 1, File: 7, Op: rw.Write, Offset: 1<<20 + 64<<10, Length: 32 << 10}, 1, true},
		{"just before", Batch{Queue: 1, File: 7, Op: rw.Write, Offset: 1<<20 - 32<<10, Length: 32 << 10}, 1, true},
		{"gap", Batch{Queue: 1, File: 7, Op: rw.Write, Offset: 1<<20 + 96<<10, Length: 32 << 10}, 1, false},
		{"overlap", Batch{Queue: 1, File: 7, Op: rw.Write, Offset: 1<<20 + 32<<10, Length: 64 << 10}, 1, false},
		{"other server", Batch{Queue: 2, File: 7, Op: rw.Write, Offset: 1<<20 + 64<<10, Length: 32 << 10}, 1, false},
		{"other file", Batch{Queue: 1, File: 8, Op: rw.Write, Offset: 1<<20 + 64<<10, Length: 32 << 10}, 1, false},
		{"other operation", Batch{Queue: 1, File: 7, Op: rw.Read, Offset: 1<<20 + 64<<10, Length: 32 << 10}, 1, false},
		{"over the limit", Batch{Queue: 1, File: 7, Op: rw.Write, Offset: 1<<20 + 64<<10, Length: 32 << 10}, 15, false},
		{"at the limit", Batch{Queue: 1, File: 7, Op: rw.Write, Offset: 1<<20 + 64<<10, Length: 32 << 10}, 14, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := AccessOf(start, 2)
			got := a.Join(tt.b, tt.n, 16)
			if got != tt.want {
				t.Fatalf("Join = %v, want %v", got, tt.want)
			}
			want := AccessOf(start, 2)
			if got {
				want.Offset, want.Length, want.Requests = min(start.Offset, tt.b.Offset), start.Length+tt.b.Length, 2+tt.n
			}
			if a != want {
				t.Errorf("access %+v, want %+v", a, want)
			}
		})
	}
}
