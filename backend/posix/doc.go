// Package posix is the backend for a POSIX directory, typically a mounted
// parallel file system: reads and writes are pread and pwrite on the real
// files, and a striping layout (stripe size and count, per directory through
// a backend.LayoutFile) assigns each piece of a request to a data server
// queue of the forwarding daemon's scheduler.
//
// The tree is confined with os.Root: absolute paths, ".." and symlinks that
// leave the root are refused with backend.ErrPath.
//
//	b, err := posix.New("/mnt/pfs/export", backend.DefaultLayout(4))
//	pieces, _ := b.Split(nil, "run/out.dat", off, n)
//	for _, pc := range pieces { // one scheduler queue per pc.Server
//		b.WriteAt(ctx, "run/out.dat", pc.Server, data[pc.Offset-off:][:pc.Length], pc.Offset)
//	}
package posix
