// Package access describes what an I/O node sees of its workload: the
// access-pattern classes the Council detects (FPP, SC, SS) and the
// per-interval Observation the Announcer reports, computed from the request
// stream by an Accumulator.
//
// The Accumulator is a pure state machine used by the forwarding daemon and
// by the simulator alike: feed it every request an I/O node receives from its
// clients and every completed byte, then close the interval.
//
//	var acc access.Accumulator
//	acc.Request(clientID, processID, fileHandle, offset, length, rw.Write)
//	acc.Done(length)
//	obs := acc.Close(node, start, time.Second, dataServers, window)
package access
