package simplot

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/adaptio/adaptio/dataset"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/workload"
)

func TestAllWritesEveryFigure(t *testing.T) {
	var exps []dataset.Experiment
	for _, ion := range []int{1, 2} {
		sc := workload.Scenario{Pattern: workload.Pattern{Processes: 128, Layout: workload.Shared, Spatiality: workload.Strided,
			Op: rw.Read, RequestSize: 32 << 10, TotalBytes: 4 << 30}, IONodes: ion}
		for i, w := range sched.Windows {
			exps = append(exps, dataset.Experiment{Run: dataset.Run{Scenario: sc, Scheduler: "twins", Window: w}, Makespan: time.Duration(10+i) * time.Second})
		}
		exps = append(exps, dataset.Experiment{Run: dataset.Run{Scenario: sc, Scheduler: "fifo"}, Makespan: 12 * time.Second},
			dataset.Experiment{Run: dataset.Run{Scenario: sc, Scheduler: "hbrr"}, Makespan: 13 * time.Second})
	}
	dir := t.TempDir()
	files, err := All(exps, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"fig1-1ion.svg", "fig1-1ion.png", "fig1-2ion.svg", "fig1-2ion.png", "best-window.svg", "best-window.png", "twins-vs-fifo.svg", "twins-vs-fifo.png"}
	if len(files) != len(want) {
		t.Fatalf("wrote %v, want %v", files, want)
	}
	for _, name := range want {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() < 500 {
			t.Errorf("%s has %d bytes, want a drawing", name, fi.Size())
		}
	}
}
