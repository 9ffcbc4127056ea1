package eval

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/forge"
)

const forgeSample = `forwarders;clients;processes;layout;spatiality;odirect;stonewall;request;total;operation;time;transfered;bandwidth
1;8;96;1;1;1;60;32;131072;write;60.1;2643.8;40.0
2;8;96;1;1;1;60;32;131072;write;60.1;2643.8;80.0
4;8;96;1;1;1;60;32;131072;write;60.1;2643.8;70.0
8;8;96;1;1;1;60;32;131072;write;60.1;2643.8;50.0
2;8;96;1;1;1;60;32;131072;write;60.1;2643.8;100.0
1;8;96;0;0;1;60;1024;131072;write;60.1;2643.8;10.0
`

// TestReadForge: ReadForge is forge.Read (package forge tests the format)
// with eval's errors; ForgeEnvs makes one environment per complete pattern.
func TestReadForge(t *testing.T) {
	rows, err := ReadForge(strings.NewReader(forgeSample))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 6", len(rows))
	}
	want := forge.Row{Forwarders: 1, Clients: 8, Processes: 96, Layout: 1, Spatiality: 1, RequestKiB: 32, Operation: "write", Bandwidth: 40}
	if rows[0] != want {
		t.Fatalf("row 0 = %+v, want %+v", rows[0], want)
	}
	envs, skipped, err := ForgeEnvs(rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != 1 || len(skipped) != 1 || skipped[0] != "c8-p96-fpp-contiguous-1024k-write" {
		t.Fatalf("envs %d, skipped %v", len(envs), skipped)
	}
	e := envs[0]
	if e.Key != "c8-p96-shared-strided-32k-write" || e.Best != 1 || e.Means[1] != 90 || strings.Join(e.Arms, ",") != "1,2,4,8" {
		t.Fatalf("env %s best %d means %v arms %v", e.Key, e.Best, e.Means, e.Arms)
	}
	for _, tt := range []struct {
		name, in string
		want     error
	}{
		{"bad value", strings.Replace(forgeSample, ";40.0", ";x", 1), forge.ErrFormat},
		{"no rows", strings.SplitAfter(forgeSample, "\n")[0], ErrNoData},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ReadForge(strings.NewReader(tt.in)); !errors.Is(err, tt.want) {
				t.Errorf("ReadForge = %v, want %v", err, tt.want)
			}
		})
	}
}

// Direct access (0 forwarders) is an arm labelled "direct".
func TestForgeEnvsDirectArm(t *testing.T) {
	const in = "\ufeffforwarders;clients;processes;layout;spatiality;request;operation;bandwidth\n" +
		"0;8;96;1;0;1024;write;5269\n2;8;96;1;0;1024;write;2249\n"
	rows, err := ReadForge(strings.NewReader(in))
	if err != nil {
		t.Fatalf("BOM and direct access: %v", err)
	}
	envs, skipped, err := ForgeEnvs(rows)
	if err != nil || len(skipped) != 0 || len(envs) != 1 {
		t.Fatalf("ForgeEnvs: %d envs, skipped %v, %v", len(envs), skipped, err)
	}
	if arms := envs[0].Arms; len(arms) != 2 || arms[0] != "direct" || arms[1] != "2" {
		t.Errorf("arms %v, want [direct 2]", arms)
	}
}

func TestForgeReal(t *testing.T) {
	path, err := forge.Find()
	if err != nil {
		t.Skipf("FORGE data (shared/data/%s) not found above the working directory: %v", forge.File, err)
	}
	rows, err := LoadForge(path)
	if err != nil {
		t.Fatal(err)
	}
	envs, skipped, err := ForgeEnvs(rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != 189 || len(skipped) != 0 {
		t.Fatalf("%d patterns (%d skipped), want 189", len(envs), len(skipped))
	}
	for _, e := range envs {
		for a, s := range e.Samples {
			if len(s) < 4 {
				t.Fatalf("%s arm %s: %d measurements, want about 5", e.Key, e.Arms[a], len(s))
			}
		}
	}
	// A small smoke run of the evaluation and its report.
	r, err := EvaluateForge(context.Background(), envs[:20], ForgeConfig{Config: Config{Reps: 3, Workers: 2}, Specs: DefaultSpecs(3)[:2]})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Write(t.TempDir(), "adaptio eval forge", ForgeConfig{}); err != nil {
		t.Fatal(err)
	}
}

func FuzzReadForge(f *testing.F) {
	f.Add([]byte(forgeSample))
	f.Add([]byte("forwarders;clients;processes;layout;spatiality;request;operation;bandwidth\n1;1;1;0;0;1;write;1e300\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := ReadForge(strings.NewReader(string(data)))
		if err != nil {
			return
		}
		envs, _, err := ForgeEnvs(rows)
		if err != nil {
			return
		}
		for _, e := range envs {
			if e.Best < 0 || e.Best >= len(e.Arms) {
				t.Fatalf("best arm %d of %d", e.Best, len(e.Arms))
			}
		}
	})
}
