// Package posix is the backend for a POSIX directory, typically a mounted
// parallel file system: reads and writes are pread and pwrite on the real
// files, and a layout kind (Layouts, chosen by Options.Layout) assigns each
// piece of a request to a data server queue of the forwarding daemon's
// scheduler: "lustre" reads each file's striping from the file system (a
// queue per OST), "static" (the default, described below) models one.
//
// Under the static kind a striping layout (stripe size and count, per
// directory through a layout.File) assigns the pieces. A layout file holds
// "stripe_size = 1MiB" and "stripe_count = 2" lines (see
// layout.Parse) and applies to its directory and those below it that
// have none; each directory's layout is read once per Backend (SetLayout
// writes one and refreshes the cache), so edit layout files before files
// are striped with them. Layouts only choose queues: the bytes always land
// in the one real file.
//
// The tree is confined with os.Root: absolute paths, ".." and symlinks that
// leave the root are refused with backend.ErrPath.
//
//	b, err := posix.New("/mnt/pfs/export", layout.Default(4))
//	pieces, _ := b.Split(nil, "run/out.dat", off, n)
//	for _, pc := range pieces { // one scheduler queue per pc.Server
//		b.WriteAt(ctx, "run/out.dat", pc.Server, data[pc.Offset-off:][:pc.Length], pc.Offset)
//	}
package posix
