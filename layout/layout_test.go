package layout_test

import (
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/adaptio/adaptio/layout"
)

// naive locates one byte: its server and offset in that server's share.
func naive(l layout.Layout, servers, first int, off int64) (int, int64) {
	k := off / l.StripeSize
	slot := int(k % int64(l.StripeCount))
	return (first + slot) % servers, (k/int64(l.StripeCount))*l.StripeSize + off%l.StripeSize
}

func TestLayoutAgainstNaive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		servers := rapid.IntRange(1, 6).Draw(t, "servers")
		l := layout.Layout{
			StripeSize:  rapid.Int64Range(1, 9).Draw(t, "stripe"),
			StripeCount: rapid.IntRange(1, servers).Draw(t, "count"),
		}
		first := l.FirstServer(rapid.StringMatching(`[a-z]{1,5}`).Draw(t, "path"), servers)
		off := rapid.Int64Range(0, 100).Draw(t, "off")
		n := rapid.Int64Range(0, 60).Draw(t, "n")
		pieces := l.Split(nil, servers, first, off, n)
		at := off
		for _, pc := range pieces {
			if pc.Offset != at || pc.Length <= 0 {
				t.Fatalf("piece %+v does not continue at %d", pc, at)
			}
			slot := l.Slot(pc.Server, first, servers)
			if err := l.Check(slot, pc.Offset, pc.Length); err != nil {
				t.Fatalf("piece %+v: %v", pc, err)
			}
			for b := pc.Offset; b < pc.Offset+pc.Length; b++ {
				srv, local := naive(l, servers, first, b)
				if srv != pc.Server || local != l.Local(pc.Offset)+(b-pc.Offset) {
					t.Fatalf("byte %d: piece %+v, naive server %d local %d", b, pc, srv, local)
				}
			}
			at += pc.Length
		}
		if at != off+n {
			t.Fatalf("pieces end at %d, want %d", at, off+n)
		}
		// The shares of a file of size off+n imply its size back.
		size := off + n
		var end int64
		var total int64
		for slot := range l.StripeCount {
			ls := l.LocalSize(slot, size)
			total += ls
			end = max(end, l.FileEnd(slot, ls))
		}
		if end != size || total != size {
			t.Fatalf("size %d: shares sum to %d and imply size %d", size, total, end)
		}
	})
}

func TestParseLayout(t *testing.T) {
	def := layout.Default(4)
	tests := []struct {
		in      string
		want    layout.Layout
		wantErr bool
	}{
		{"", def, false},
		{"stripe_size = 1MiB\nstripe_count = 2 # two\n", layout.Layout{StripeSize: 1 << 20, StripeCount: 2}, false},
		{"stripe_size=32K", layout.Layout{StripeSize: 32 << 10, StripeCount: 4}, false},
		{"stripe_size = 0", def, true},
		{"stripe_count = x", def, true},
		{"colour = blue", def, true},
		{"stripe_size", def, true},
	}
	for _, tt := range tests {
		got, err := layout.Parse([]byte(tt.in), def)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("Parse(%q): got %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !errors.Is(err, layout.ErrBadArgument) {
			t.Errorf("Parse(%q): error %v is not ErrBadArgument", tt.in, err)
		}
	}
	text, _ := def.MarshalText()
	if got, err := layout.Parse(text, layout.Layout{}); err != nil || got != def {
		t.Errorf("round trip: got %+v, %v; want %+v", got, err, def)
	}
}

func ExampleLayout_Split() {
	l := layout.Default(4) // 64 KiB stripes over 4 servers
	for _, p := range l.Split(nil, 4, 0, 96<<10, 128<<10) {
		fmt.Printf("server %d: bytes [%d, %d)\n", p.Server, p.Offset, p.Offset+p.Length)
	}
	// Output:
	// server 1: bytes [98304, 131072)
	// server 2: bytes [131072, 196608)
	// server 3: bytes [196608, 229376)
}

// FuzzParseLayout: any accepted layout file re-encodes to itself, and
// nothing panics.
func FuzzParseLayout(f *testing.F) {
	f.Add([]byte("stripe_size = 64KiB\nstripe_count = 4\n"))
	f.Add([]byte("# c\nstripe_size=1M"))
	f.Add([]byte("stripe_count = 9999999999999999999"))
	f.Fuzz(func(t *testing.T, in []byte) {
		l, err := layout.Parse(in, layout.Default(4))
		if err != nil {
			return
		}
		text, _ := l.MarshalText()
		again, err := layout.Parse(text, layout.Layout{})
		if err != nil || again != l {
			t.Fatalf("%+v re-parsed as %+v, %v", l, again, err)
		}
	})
}
