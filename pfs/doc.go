// Package pfs is the emulated parallel file system: N data servers on
// loopback TCP, each storing its stripes of every file in local files and
// serving accesses one at a time, each delayed by the service time of a
// modelled device (package disk: HDD by default, SSD, or none) in wall-clock
// time, so that contention between I/O nodes is real on one machine. The
// client, a backend.Backend over the servers, is package pfsclient (the
// forwarder links it without the servers): files are striped round
// robin over all of them in 64 KiB units (the PVFS default of Bez et al., FGCS 2020
// V-A). Server 0 is also the metadata server: its namespace is
// authoritative, so listings, stat, mkdir and create work while another
// data server is down, and only the accesses to that server's stripes
// fail (pfsclient.MetadataServer says why).
//
// The client and the servers speak the protocol of package pfsproto: frames
// carrying request ids, pipelined on one connection per server. A server
// that stops fails the requests sent to it with backend.ErrServerDown
// naming the server; the client dials again on the next request, so a
// server restarted on the same address is used again without intervention.
//
//	c, _ := pfs.NewCluster(pfs.ClusterOptions{Servers: 4, Dir: dir, Disk: "hdd"})
//	c.Start()
//	c.Ready(5 * time.Second)
//	defer c.Shutdown()
//	b, _ := c.Backend() // or pfsclient.NewBackend(addrs, 64<<10) from another process
//	b.Create(ctx, "out.dat", 0o644)
//	pieces, _ := b.Split(nil, "out.dat", off, n)
//	for _, p := range pieces { // one scheduler queue per p.Server
//		b.WriteAt(ctx, "out.dat", p.Server, data[p.Offset-off:][:p.Length], p.Offset)
//	}
package pfs
