// Package disk models the storage device of a PFS data server in virtual
// time: a hard disk of the 10k rpm SAS class ("hdd"), an SSD ("ssd"), a
// disk array behind a write log ("array", for the MareNostrum 4 setting), or
// "none" (no cost).
// The simulator and the emulated PFS (in wall-clock time) apply the same
// Device, so a pattern costs the same in both.
//
// A Device is a pure state machine: the caller passes the time at which an
// access starts (the device being idle) and a seeded random source, and gets
// back how long the access takes; the device updates its head and cache state.
//
//	cfg, _ := disk.DefaultConfig("hdd")
//	d, _ := disk.New(cfg)
//	pl := disk.DefaultPlacement(cfg.CapacityBytes)
//	took := d.Service(now, rw.Read, pl.Addr(file, local), 32<<10, rng)
//	now += took // the device is idle again at now
//
// The hard-disk model (see HDD) has a seek time growing with the square root
// of the distance, rotational latency computed from the angular position of
// the head and of the target sector (so a sequential write that arrives after
// its sector passed waits almost a full revolution, as a write-through disk
// does), a zoned sustained transfer rate, command overhead hidden for queued
// back-to-back commands, and a segmented read cache filled by read-ahead
// while the disk is idle. Writes go through to the platter (write cache off).
package disk
