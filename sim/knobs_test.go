package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// knobRun runs 16 MiB file-per-process writes, calling set at the end of
// every interval.
func knobRun(t *testing.T, set func(s *Sim) error) Result {
	t.Helper()
	cfg := Config{Patterns: []workload.Pattern{pattern(16, workload.FilePerProcess, workload.Contiguous, rw.Write, 16<<20, 2<<30)},
		ClientNodes: 4, IONodes: 2, Seed: 3}
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), Hooks{OnNodeInterval: func(s *Sim, _ time.Duration, _ []access.Observation) error { return set(s) }})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Knobs set to the values in force change nothing, to the event; set to
// others at run time they change the run (here: more requests per access,
// fewer accesses, more bandwidth), and every byte is still served.
func TestKnobsAtRunTime(t *testing.T) {
	base := knobRun(t, func(*Sim) error { return nil })
	same := knobRun(t, func(s *Sim) error {
		for n := range s.cfg.IONodes {
			if err := s.SetAggregate(n, s.Aggregate(n)); err != nil {
				return err
			}
			if err := s.SetPerServer(n, s.PerServer(n)); err != nil {
				return err
			}
		}
		return nil
	})
	if same.Events != base.Events || same.Makespan != base.Makespan {
		t.Fatalf("knobs set to their values: %d events, %v; untouched: %d events, %v", same.Events, same.Makespan, base.Events, base.Makespan)
	}
	tuned := knobRun(t, func(s *Sim) error {
		if s.Now() < 2*time.Second {
			return nil
		}
		for n := range s.cfg.IONodes {
			if err := s.SetAggregate(n, 64); err != nil {
				return err
			}
			if err := s.SetPerServer(n, 2); err != nil {
				return err
			}
			if q, b := s.Queued(n); q < 0 || b < 0 {
				t.Errorf("node %d: %d requests, %d bytes queued", n, q, b)
			}
		}
		return nil
	})
	if tuned.Bytes != base.Bytes || tuned.Bandwidth <= base.Bandwidth {
		t.Errorf("aggregation 64, 2 accesses per server from 2 s on: %d bytes at %.0f MB/s; defaults: %d bytes at %.0f MB/s; want the same bytes, faster",
			tuned.Bytes, tuned.Bandwidth/1e6, base.Bytes, base.Bandwidth/1e6)
	}
	s, err := New(Config{Patterns: []workload.Pattern{pattern(4, workload.Shared, workload.Contiguous, rw.Read, 1<<20, 4<<20)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{s.SetAggregate(0, 0), s.SetPerServer(0, 0), s.SetAggregate(1, 4), s.SetPerServer(-1, 4)} {
		if !errors.Is(err, ErrBadConfig) {
			t.Errorf("bad knob setting: %v, want ErrBadConfig", err)
		}
	}
}
