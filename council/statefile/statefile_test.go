package statefile

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

func newCore(t *testing.T) *council.Council {
	t.Helper()
	c, err := council.New(council.Config{Windows: sched.Windows, Nodes: 1}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A saved state loads into a fresh core with the same round; a missing
// file is a fresh start; a corrupt one is refused with its name.
func TestSaveLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	fresh := newCore(t)
	if ok, err := Load(fresh, path); ok || err != nil {
		t.Fatalf("missing file: %v, %v; want a fresh start", ok, err)
	}
	c := newCore(t)
	for k := range 3 {
		now := time.Duration(k+1) * time.Second
		o := access.Observation{Start: now - time.Second, Interval: time.Second, DataServers: 4, Processes: 8,
			Op: rw.Write, FileHandles: 8, ReqAvg: 32 << 10, ReqMin: 32 << 10, ReqMax: 32 << 10,
			OffsetDist: 32 << 10, ProcDist: 32 << 10, Bandwidth: 1e8, Bytes: 1e8, Requests: 3000, Window: time.Millisecond}
		if err := c.Observe(now, council.Report{Instance: 1, Seq: uint64(k + 1), Round: c.Round(), Obs: o}); err != nil {
			t.Fatal(err)
		}
		c.Poll(now + time.Second)
	}
	if err := Save(c, path); err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(filepath.Dir(path)); err != nil || len(ents) != 1 || ents[0].Name() != filepath.Base(path) {
		t.Errorf("directory after Save: %v (%v), want only %s (no temporary file left)", ents, err, filepath.Base(path))
	}
	back := newCore(t)
	if ok, err := Load(back, path); !ok || err != nil || back.Round() != c.Round() || back.Round() == 0 {
		t.Fatalf("Load: %v, %v, round %d, want %d (> 0)", ok, err, back.Round(), c.Round())
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(newCore(t), path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("corrupt state: %v, want an error naming %s", err, path)
	}
}
