package posix_test

import (
	"context"
	"fmt"
	"os"

	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/layout"
)

func Example() {
	dir, _ := os.MkdirTemp("", "posix-example")
	defer os.RemoveAll(dir)
	b, err := posix.New(dir, layout.Default(4)) // 64 KiB stripes, 4 server queues
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	ctx := context.Background()
	b.Mkdir(ctx, "narrow", 0o755)
	b.SetLayout("narrow", layout.Layout{StripeSize: 1 << 20, StripeCount: 1})

	for _, path := range []string{"wide.dat", "narrow/one.dat"} {
		pieces, _ := b.Split(nil, path, 0, 256<<10)
		fmt.Println(path, len(pieces), "pieces")
	}
	b.Create(ctx, "wide.dat", 0o644)
	second, _ := b.Split(nil, "wide.dat", 64<<10, 11) // stripe 1: on the server after the file's first
	b.WriteAt(ctx, "wide.dat", second[0].Server, []byte("in stripe 1"), 64<<10)
	st, _ := b.Stat(ctx, "wide.dat")
	fmt.Println("size", st.Size)
	_, err = b.Stat(ctx, "../etc/passwd")
	fmt.Println(err)
	// Output:
	// wide.dat 4 pieces
	// narrow/one.dat 1 pieces
	// size 65547
	// backend: path outside the export root: "../etc/passwd"
}
