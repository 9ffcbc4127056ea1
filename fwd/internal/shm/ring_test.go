package shm_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/fwd/internal/shm"
)

func TestSQERoundTrip(t *testing.T) {
	in := fwdproto.Msg{Op: fwdproto.OpReadShm, ID: 1<<64 - 1, Handle: 9, Offset: 1 << 40, Length: 32 << 10, Process: 7, ShmOff: 1 << 20}
	var b [shm.SQESize]byte
	shm.PutSQE(b[:], &in)
	var out fwdproto.Msg
	if err := shm.DecodeSQE(b[:], &out); err != nil || !reflect.DeepEqual(out, in) {
		t.Fatalf("DecodeSQE(PutSQE(%+v)) = %+v, %v", in, out, err)
	}
}

// The submission decoder never panics, accepts only read-shm and
// write-shm with non-negative offset and length, and what it accepts
// encodes back to the same fields.
func FuzzDecodeSQE(f *testing.F) {
	var b [shm.SQESize]byte
	shm.PutSQE(b[:], &fwdproto.Msg{Op: fwdproto.OpWriteShm, ID: 3, Handle: 1, Offset: 4096, Length: 100, ShmOff: 65536})
	f.Add(b[:])
	f.Add(make([]byte, shm.SQESize))
	f.Add([]byte{13})
	f.Fuzz(func(t *testing.T, p []byte) {
		var m fwdproto.Msg
		if err := shm.DecodeSQE(p, &m); err != nil {
			return
		}
		if (m.Op != fwdproto.OpReadShm && m.Op != fwdproto.OpWriteShm) || m.Offset < 0 || m.Length < 0 {
			t.Fatalf("accepted %+v", m)
		}
		var again [shm.SQESize]byte
		shm.PutSQE(again[:], &m)
		var m2 fwdproto.Msg
		if err := shm.DecodeSQE(again[:], &m2); err != nil || !reflect.DeepEqual(m2, m) {
			t.Fatalf("re-encoded %+v decodes to %+v, %v", m, m2, err)
		}
	})
}

// The spinner keeps a poller sweeping for polls empty sweeps and then
// until spin has passed; negative polls never spin.
func TestSpinner(t *testing.T) {
	var s shm.Spinner
	for i := 0; i < 10; i++ {
		if !s.More(10, -1) {
			t.Fatalf("sweep %d of 10: stopped early", i+1)
		}
	}
	if s.More(10, -1) {
		t.Fatal("spin off: kept sweeping after the polls ran out")
	}
	s.Reset()
	if s.More(-1, time.Hour) {
		t.Fatal("negative polls: swept at all")
	}

	const spin = 20 * time.Millisecond
	s.Reset()
	start := time.Now()
	for i := 0; i < 3; i++ {
		if !s.More(3, spin) {
			t.Fatalf("sweep %d of 3: stopped early", i+1)
		}
	}
	for sweeps := 0; ; sweeps++ {
		if !s.More(3, spin) {
			if since := time.Since(start); since < spin {
				t.Fatalf("stopped after %v, before the %v spin", since, spin)
			}
			break
		}
		if sweeps > 1e9 {
			t.Fatal("never stopped")
		}
	}
	s.Reset()
	if !s.More(0, spin) {
		t.Fatal("reset: the spin did not start again")
	}
}
