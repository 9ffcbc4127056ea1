package fusemount_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/adaptio/adaptio/fusemount"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdbench"
	"github.com/adaptio/adaptio/internal/poll"
	"github.com/adaptio/adaptio/tune"
	"github.com/adaptio/adaptio/tune/knob"
	"github.com/adaptio/adaptio/tune/tunerun"
)

// The mount's knobs are its client's request size (up to the kernel's
// largest write) and requests in flight; a tuner changes them while
// applications write through the mount, and every byte lands.
func TestMountKnobsUnderATuner(t *testing.T) {
	root := t.TempDir()
	mnt, c, m := mountedServer(t, root, fwd.Options{}, fusemount.Options{MaxWrite: 512 << 10})
	want := []knob.Knob{
		{Name: fusemount.KnobMaxIO, Value: 512 << 10, Min: client.MinMaxIO, Max: 512 << 10},
		{Name: fusemount.KnobInFlight, Value: fusemount.MaxInFlight, Min: 1, Max: fusemount.MaxInFlight},
	}
	if got := m.Knobs(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("knobs %+v, want %+v", got, want)
	}
	for _, bad := range []struct {
		Knob  string
		Value int
	}{{fusemount.KnobMaxIO, 1 << 20}, {fusemount.KnobInFlight, 0}, {"max_pages_per_rpc", 8}} {
		if err := m.SetKnob(bad.Knob, bad.Value); !errors.Is(err, fusemount.ErrKnob) {
			t.Errorf("SetKnob(%s, %d): %v, want ErrKnob", bad.Knob, bad.Value, err)
		}
	}
	if err := m.SetKnob(fusemount.KnobMaxIO, 64<<10); err != nil {
		t.Fatal(err)
	}
	if err := m.SetKnob(fusemount.KnobInFlight, 4); err != nil {
		t.Fatal(err)
	}
	if c.MaxIO() != 64<<10 || c.MaxInFlight() != 4 {
		t.Fatalf("client has request size %d and %d in flight, want 65536 and 4", c.MaxIO(), c.MaxInFlight())
	}

	const every = 20 * time.Millisecond
	tn, err := tune.New("iopathtune", tune.Options{Knobs: m.Knobs(), Interval: every})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- tunerun.Run(ctx, tn, m, every, nil) }()
	start := m.Knobs()
	changed := func() bool {
		now := m.Knobs()
		return now[0] != start[0] && now[1] != start[1]
	}
	data := make([]byte, 8<<20)
	fwdbench.Fill(data, 11, 0, 0)
	path := filepath.Join(mnt, "tuned")
	for round := 0; !changed() || round < 2; round++ {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if round > 1000 {
			t.Fatal("the tuner changed neither knob in 1,000 writes of 8 MiB")
		}
	}
	cancel()
	if err := <-ran; !errors.Is(err, context.Canceled) {
		t.Errorf("tunerun.Run: %v, want context.Canceled", err)
	}
	poll.Until(t, "the write-behind to drain", 10*time.Second, func() bool { return m.Sample().Queued == 0 })
	got, err := os.ReadFile(filepath.Join(root, "tuned"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("the file written while the tuner changed the knobs differs")
	}
	if s := m.Sample(); s.Bytes < int64(len(data)) || s.Requests == 0 {
		t.Errorf("sample %+v: want at least the file's bytes and some requests", s)
	}
	t.Logf("knobs from %+v to %+v", start, m.Knobs())
}
