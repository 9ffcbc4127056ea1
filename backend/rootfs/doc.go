// Package rootfs is a directory tree confined with os.Root, with a cache of
// open files so that positioned reads and writes cost one system call. The
// POSIX backend and the emulated PFS data servers store their files in one.
//
//	fsys, err := rootfs.Open(dir, 0)
//	fsys.Create("run/out.dat", 0o644)
//	fsys.WriteAt("run/out.dat", p, off) // pwrite on a cached handle
//	fsys.ReadAt("run/out.dat", p, off)  // short count at end of file, no error
//	fsys.Stat("../x")                   // backend.ErrPath
package rootfs
