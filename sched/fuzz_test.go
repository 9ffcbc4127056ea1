package sched

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/adaptio/adaptio/rw"
)

// FuzzSchedulers interprets the input as a program of calls (valid and
// invalid requests, dispatches, completions of real and bogus ids, parameter
// changes, switches) against a Switcher and checks that nothing panics, that
// errors are the documented ones, and that the counts add up.
func FuzzSchedulers(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte("\x00\x10\x20\x30\x40\x50\x60\x70\x80\x90\xa0\xb0\xc0\xd0\xe0\xf0twins fifo hbrr"))
	f.Fuzz(fuzzProgram)
}

func fuzzProgram(t *testing.T, data []byte) {
	names := Names()
	{
		if len(data) < 2 {
			return
		}
		servers := int(data[0]%5) + 1
		sw, err := NewSwitcher(names[int(data[1])%len(names)], Config{Servers: servers, SkipEmpty: data[0]&0x80 != 0})
		if err != nil {
			t.Fatal(err)
		}
		data = data[2:]
		var now time.Duration
		var flight []uint64
		accepted, dispatched := 0, 0
		next := func(n int) []byte {
			if len(data) < n {
				d := make([]byte, n)
				copy(d, data)
				data = nil
				return d
			}
			d := data[:n]
			data = data[n:]
			return d
		}
		for len(data) > 0 {
			op := next(1)[0]
			switch op % 8 {
			case 0, 1, 2: // add a request, possibly invalid
				b := next(8)
				r := Request{
					ID:     uint64(b[0]),
					Queue:  int(int8(b[1])) % (servers + 2),
					File:   uint64(b[2] % 4),
					Offset: int64(int16(binary.LittleEndian.Uint16(b[3:5]))) * 512,
					Length: int64(int8(b[5])) * 512,
					Op:     rw.Op(b[6] % 4),
				}
				if err := sw.Add(now, r); err == nil {
					accepted++
				}
			case 3, 4: // dispatch
				if b, ok, retry := sw.Next(now); ok {
					dispatched += len(b.Requests)
					flight = append(flight, b.ID)
				} else if retry > now && retry-now < time.Second {
					now = retry
				}
			case 5: // complete one, or a bogus id
				if len(flight) > 0 {
					if err := sw.Complete(now, flight[0], 1, 1); err != nil {
						t.Fatalf("Complete in-flight: %v", err)
					}
					flight = flight[1:]
				} else if err := sw.Complete(now, uint64(op)<<20, 1, 1); err == nil {
					t.Fatal("bogus completion accepted")
				}
			case 6: // time, parameters
				now += time.Duration(op) * time.Microsecond
				p := sw.Params()
				p.Window = time.Duration(next(1)[0]) * 10 * time.Microsecond
				p.MaxBatch = int(next(1)[0]%20) - 2
				_ = sw.SetParams(now, p) // may be invalid: must not change anything then
			case 7:
				if err := sw.Switch(now, names[int(next(1)[0])%len(names)]); err != nil {
					t.Fatal(err)
				}
			}
			if sw.InFlight() != len(flight) {
				t.Fatalf("InFlight %d, want %d", sw.InFlight(), len(flight))
			}
			if sw.Len() != accepted-dispatched {
				t.Fatalf("Len %d, want %d accepted - %d dispatched", sw.Len(), accepted, dispatched)
			}
		}
		for _, id := range flight {
			if err := sw.Complete(now, id, 1, 1); err != nil {
				t.Fatal(err)
			}
		}
		d := &Driver{S: sw, Now: now}
		if err := d.Drain(); err != nil {
			t.Fatal(err)
		}
		if dispatched+d.Dispatched != accepted {
			t.Fatalf("dispatched %d + %d, accepted %d", dispatched, d.Dispatched, accepted)
		}
	}
}
