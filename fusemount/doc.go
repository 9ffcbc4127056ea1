// Package fusemount presents a forwarding daemon as a mounted file system
// (FUSE, hanwen/go-fuse/v2), so unmodified programs (dd, fio, MPI-IO
// applications) do their I/O through the forwarder. Every read and write
// reaches the daemon as the application issued it (direct I/O: no page
// cache on the client), tagged with the calling process's id so the daemon
// sees the real access pattern.
//
//	c, _ := client.Dial("127.0.0.1:7070")
//	m, err := fusemount.Mount("/mnt/adaptio", c, fusemount.Options{})
//	defer m.Unmount()
//	m.Wait() // until unmounted (fusermount -u, umount)
package fusemount
