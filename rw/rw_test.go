package rw

import (
	"errors"
	"testing"
)

func TestParseOpRoundTrips(t *testing.T) {
	for _, op := range []Op{Read, Write} {
		got, err := ParseOp(op.String())
		if err != nil || got != op {
			t.Errorf("ParseOp(%q) = %v, %v; want %v", op.String(), got, err, op)
		}
		if !op.Valid() {
			t.Errorf("%v not valid", op)
		}
	}
	for _, s := range []string{"", "rw", "append", "0"} {
		if _, err := ParseOp(s); !errors.Is(err, ErrBadOp) {
			t.Errorf("ParseOp(%q): %v, want ErrBadOp", s, err)
		}
	}
	if Op(0).Valid() || Op(3).Valid() {
		t.Error("zero or unknown op reported valid")
	}
	if got := Op(7).String(); got != "op(7)" {
		t.Errorf("Op(7) = %q", got)
	}
}

func TestPairFor(t *testing.T) {
	p := Pair[int]{Read: 1, Write: 2}
	if p.For(Read) != 1 || p.For(Write) != 2 || p.For(Op(0)) != 0 || p.For(Op(9)) != 0 {
		t.Fatalf("For: read %d write %d invalid %d %d", p.For(Read), p.For(Write), p.For(Op(0)), p.For(Op(9)))
	}
}
