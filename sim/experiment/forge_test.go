package experiment

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/forge"
	"github.com/adaptio/adaptio/workload"
)

func TestSpearman(t *testing.T) {
	tests := []struct {
		name string
		x, y []float64
		want float64
	}{
		{"same order", []float64{1, 2, 3, 4}, []float64{10, 20, 30, 400}, 1},
		{"reversed", []float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}, -1},
		{"ties get mean ranks", []float64{1, 1, 2}, []float64{1, 2, 3}, math.Sqrt(3) / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Spearman(tt.x, tt.y); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if got := Spearman([]float64{1, 1}, []float64{1, 2}); !math.IsNaN(got) {
		t.Errorf("constant series: got %v, want NaN", got)
	}
}

// TestForgePointsMedians: one point per (pattern, forwarders) with the
// median of its repetitions; reads and direct access are left out, the
// direct rows counted.
func TestForgePointsMedians(t *testing.T) {
	in := `forwarders;clients;processes;layout;spatiality;odirect;stonewall;request;total;operation;time;transfered;bandwidth
1;8;96;1;1;1;60;32;131072;write;60;1;30
1;8;96;1;1;1;60;32;131072;write;60;1;10
1;8;96;1;1;1;60;32;131072;write;60;1;20
2;8;96;0;0;1;60;8192;131072;write;60;1;5
2;8;96;0;0;1;60;8192;131072;write;60;1;7
0;8;96;0;0;1;60;8192;131072;write;60;1;9
0;8;96;0;0;1;60;8192;131072;write;60;1;11
2;8;96;0;0;1;60;8192;131072;read;60;1;100
`
	rows, err := forge.Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	pts, direct := ForgePoints(rows)
	if len(pts) != 2 || direct != 2 {
		t.Fatalf("%d points, %d direct rows; want 2 and 2", len(pts), direct)
	}
	// Sorted by pattern key: fpp before shared.
	if p := pts[0]; p.Layout != workload.FilePerProcess || p.Forwarders != 2 || p.Measured != 6 || p.RequestBytes != 8<<20 || p.Repetitions != 2 {
		t.Errorf("first point %+v, want fpp, 2 forwarders, median 6, 8 MiB, 2 repetitions", p)
	}
	if p := pts[1]; p.Spatiality != workload.Strided || p.Measured != 20 || p.Clients != 8 {
		t.Errorf("second point %+v, want strided, median 20, 8 clients", p)
	}
}

// TestForgeShape runs a few FORGE patterns on the MareNostrum 4 setting:
// file-per-process bandwidth grows with the forwarders, shared-file
// bandwidth stays far below it, as measured.
func TestForgeShape(t *testing.T) {
	path, err := forge.Find()
	if err != nil {
		t.Skipf("FORGE data absent (../shared/data/%s): %v", forge.File, err)
	}
	rows, err := forge.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	pts, direct := ForgePoints(rows)
	if direct != 0 {
		t.Errorf("%d direct-access rows in the MareNostrum 4 file, want none", direct)
	}
	if len(pts) < 700 {
		t.Fatalf("%d points, want the 756 (pattern, forwarders) of the file", len(pts))
	}
	var sub []ForgePoint
	for _, p := range pts {
		if p.Processes == 96 && (p.RequestBytes == 4<<20 || p.RequestBytes == 128<<10) {
			sub = append(sub, p)
		}
	}
	t.Logf("%d points in the subset", len(sub))
	rep, err := CompareForge(context.Background(), sub, ForgeOptions{Stonewall: 2 * time.Second, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	fpp := map[int]float64{}
	var shared float64
	for _, p := range rep.Points {
		if p.Layout == workload.FilePerProcess && p.RequestBytes == 4<<20 {
			fpp[p.Forwarders] = p.Model
		}
		if p.Layout == workload.Shared && p.RequestBytes == 4<<20 && p.Forwarders == 1 {
			shared = max(shared, p.Model)
		}
	}
	if !(fpp[1] < fpp[2] && fpp[2] < fpp[4] && fpp[4] < fpp[8]) {
		t.Errorf("file per process, 4 MiB: model bandwidth by forwarders %v, want increasing", fpp)
	}
	if !(shared < fpp[1]) {
		t.Errorf("shared file %.0f MiB/s, want below file per process %.0f MiB/s with one forwarder", shared, fpp[1])
	}
	if !(rep.Spearman > 0.3) {
		t.Errorf("Spearman on %d points %.3f, want > 0.3", len(sub), rep.Spearman)
	}
}
