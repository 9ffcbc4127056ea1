package posix_test

import (
	"testing"

	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/layout"
)

// BenchmarkSplitLayout compares the cost of splitting a 3 MiB request
// into 1 MiB stripes under the static kind and under the lustre kind with
// the file's layout cached (the steady state: no getxattr).
func BenchmarkSplitLayout(b *testing.B) {
	for _, kind := range []string{posix.LayoutStatic, posix.LayoutLustre} {
		b.Run(kind, func(b *testing.B) {
			lov := plainLayout(lmib, 7, 2, 5)
			be, err := posix.Open(posix.Options{Root: b.TempDir(), Layout: kind, Servers: 8,
				Static: layout.Layout{StripeSize: lmib, StripeCount: 3},
				Xattr:  func(name, attr string) ([]byte, error) { return lov, nil }})
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			var dst []layout.Piece
			for b.Loop() {
				if dst, err = be.Split(dst[:0], "f", 0, 3*lmib); err != nil || len(dst) != 3 {
					b.Fatal(len(dst), err)
				}
			}
		})
	}
}
