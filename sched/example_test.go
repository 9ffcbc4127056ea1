package sched_test

import (
	"fmt"
	"time"

	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

func ExampleNew() {
	s, err := sched.New("to-agg", sched.Config{Servers: 2})
	if err != nil {
		panic(err)
	}
	// Two contiguous writes to file 7 on server 0, one read on server 1.
	s.Add(0, sched.Request{ID: 1, Queue: 0, File: 7, Offset: 0, Length: 4096, Op: rw.Write})
	s.Add(1, sched.Request{ID: 2, Queue: 1, File: 9, Offset: 0, Length: 4096, Op: rw.Read})
	s.Add(2, sched.Request{ID: 3, Queue: 0, File: 7, Offset: 4096, Length: 4096, Op: rw.Write})
	for {
		b, ok, _ := s.Next(3)
		if !ok {
			break
		}
		fmt.Printf("server %d file %d %v [%d, %d) from %d requests\n", b.Queue, b.File, b.Op, b.Offset, b.Offset+b.Length, len(b.Requests))
		s.Complete(4, b.ID, b.Length, time.Microsecond)
	}
	st, _ := sched.StatsOf(s)
	fmt.Printf("%d requests in %d batches, %d bytes\n", st.Dispatched, st.Batches, st.BytesCompleted)
	// Output:
	// server 0 file 7 write [0, 8192) from 2 requests
	// server 1 file 9 read [0, 4096) from 1 requests
	// 3 requests in 2 batches, 12288 bytes
}

// TWINS serves one server per window; I/O node 1 starts at server 1. With
// server 1's queue empty it waits for the window's end.
func ExampleNew_twins() {
	s, _ := sched.New("twins", sched.Config{Servers: 2, Node: 1, Nodes: 2, Window: time.Millisecond})
	s.Add(0, sched.Request{ID: 1, Queue: 0, Length: 512, Op: rw.Read})
	_, ok, retry := s.Next(0)
	fmt.Println(ok, retry)
	b, ok, _ := s.Next(retry)
	fmt.Println(ok, b.Queue)
	// Output:
	// false 1ms
	// true 0
}

func ExampleSwitcher() {
	sw, _ := sched.NewSwitcher("twins", sched.Config{Servers: 4})
	for i := range 4 {
		sw.Add(0, sched.Request{ID: uint64(i), Queue: 3 - i, Length: 1, Op: rw.Write})
	}
	b, _, _ := sw.Next(0) // TWINS serves server 0 first: the last request
	// The Council picks another algorithm: the queue moves over in arrival order.
	sw.Switch(0, "fifo")
	for {
		n, ok, _ := sw.Next(0)
		if !ok {
			break
		}
		fmt.Print(n.Requests[0].ID, " ")
		sw.Complete(1, n.ID, 1, 0)
	}
	fmt.Println(sw.Complete(1, b.ID, 1, 0)) // TWINS's batch still completes
	// Output: 0 1 2 <nil>
}

func ExampleNames() {
	fmt.Println(sched.Names())
	d, _ := sched.Describe("hbrr")
	fmt.Println(d)
	// Output:
	// [aioli fifo hbrr mlf noop sjf sw to to-agg twins wfq]
	// handle-based round robin with a byte quantum per turn, merging up to 16 contiguous requests (IOFSL HBRR)
}

func ExampleWindowLabel() {
	for _, w := range sched.Windows {
		fmt.Print(sched.WindowLabel(w), " ")
	}
	fmt.Println()
	// Output: 125µs 250µs 500µs 1ms 2ms 4ms 8ms
}

// The Council announces a new TWINS window. Queued requests stay.
func ExampleSwitcher_SetWindow() {
	sw, _ := sched.NewSwitcher("twins", sched.Config{Servers: 2})
	sw.Add(0, sched.Request{ID: 1, Queue: 1, Length: 4096, Op: rw.Read})
	_, _, retry := sw.Next(0) // server 0's window, its queue is empty
	fmt.Println("wait until", retry)
	if err := sw.SetWindow(0, sched.Windows[0]); err != nil { // 125µs
		panic(err)
	}
	_, _, retry = sw.Next(0)
	fmt.Println("wait until", retry, "queued", sw.Len())
	b, _, _ := sw.Next(retry)
	fmt.Println("server", b.Queue)
	// Output:
	// wait until 1ms
	// wait until 125µs queued 1
	// server 1
}
