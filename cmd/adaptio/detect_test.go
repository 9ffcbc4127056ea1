package main

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/detect"
	"github.com/adaptio/adaptio/detect/learn"
	"github.com/adaptio/adaptio/workload"
)

// papersModel is a tree trained on the papers' five features of a small
// synthetic set.
func papersModel(t *testing.T) *detect.Model {
	t.Helper()
	s, err := learn.Synthetic(workload.Grid(false), learn.SyntheticOptions{PerScenario: 10, MaxRequests: 256}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	m, err := learn.Train("tree", s.X, s.Y, detect.TrainOptions{Features: detect.PaperFeatures()}, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDetectPredictCSV(t *testing.T) {
	all, papers := detect.Default(), papersModel(t)
	for _, tt := range []struct {
		name, in string
		papers   bool     // use the papers-features model
		want     []string // lines
		err      bool
	}{
		{"headerless", "32,32768,32768,32768,32768,32768,1\n1,32768,32768,32768,38934133,4194304,128\n", false,
			[]string{"class,p_fpp,p_sc,p_ss", "FPP,", "SS,"}, false},
		{"header any order with op", "obs_op,req_max,proc_offset_dist,file_sharers,req_min,req_avg,file_handles,offset_dist\nread,32768,32768,64,32768,32768,1,3000000000\n", false,
			[]string{"class,p_fpp,p_sc,p_ss,op", "SC,"}, false},
		{"header without a used column", "file_handles,req_avg,req_min,req_max,offset_dist\n1,2,2,2,2\n", false, nil, true},
		{"papers: header without proc_offset_dist", "obs_op,req_max,req_min,req_avg,file_handles,offset_dist\nread,32768,32768,32768,1,3000000000\n", true,
			[]string{"class,p_fpp,p_sc,p_ss,op", "SC,"}, false},
		{"papers: headerless five", "32,32768,32768,32768,32768\n", true, []string{"class,p_fpp,p_sc,p_ss", "FPP,"}, false},
		{"papers: headerless seven", "32,32768,32768,32768,32768,0,0\n", true, []string{"class,p_fpp,p_sc,p_ss", "FPP,"}, false},
		{"headerless five for a seven-feature model", "32,32768,32768,32768,32768\n", false, nil, true},
		{"missing column", "file_handles,req_avg\n1,2\n", false, nil, true},
		{"not a number", "1,2,3,4,5,6,x\n", false, nil, true},
		{"wrong field count", "1,2,3\n", false, nil, true},
		{"negative size", "32,-32768,32768,32768,32768,32768,1\n", false, nil, true},
		{"NaN distance", "32,32768,32768,32768,NaN,32768,1\n", false, nil, true},
		{"infinite count", "+Inf,32768,32768,32768,32768,32768,1\n", false, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			m := all
			if tt.papers {
				m = papers
			}
			err := runDetectPredict(m, strings.NewReader(tt.in), &out)
			if tt.err {
				if !errors.Is(err, errDetectInput) {
					t.Fatalf("err = %v, want a bad-input error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("got %q, want %d lines", out.String(), len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("line %d = %q, want prefix %q", i, lines[i], w)
				}
			}
		})
	}
}

func TestDetectTrainEvalSynthetic(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tree.json")
	var stdout, stderr bytes.Buffer
	cfg := detectTrainConfig{Data: learn.SyntheticDir, Kind: "tree", Out: out, Seed: 3, PerExperiment: 2, TrainFraction: 0.7}
	if err := runDetectTrain(cfg, &stdout, &stderr); err != nil {
		t.Fatalf("train: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "== test split") || !strings.Contains(stdout.String(), "kappa") {
		t.Errorf("train output lacks the test report:\n%s", stdout.String())
	}
	first, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if err := runDetectEval(detectEvalConfig{Data: learn.SyntheticDir, ModelFile: out, Retrain: true}, &stdout, &stderr); err != nil {
		t.Fatalf("eval: %v\n%s", err, stderr.String())
	}
	// Eval rebuilds the same split: its test report equals train's.
	if !strings.Contains(stdout.String(), "training time:") || !strings.Contains(stdout.String(), "rows 606 (skipped 0)") {
		t.Errorf("eval output:\n%s", stdout.String())
	}
	// Same seed, same file.
	if err := runDetectTrain(cfg, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(out)
	if !bytes.Equal(first, second) {
		t.Errorf("retraining with the same seed changed the model file")
	}
}

func TestDetectTrainPapersFeatures(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tree.json")
	var stdout, stderr bytes.Buffer
	cfg := detectTrainConfig{Data: learn.SyntheticDir, Kind: "tree", Out: out, Seed: 3, PerExperiment: 2, TrainFraction: 0.7, FeatureSet: "papers"}
	if err := runDetectTrain(cfg, &stdout, &stderr); err != nil {
		t.Fatalf("train: %v\n%s", err, stderr.String())
	}
	m, err := learn.LoadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.Features(), ","); got != strings.Join(detect.PaperFeatures(), ",") {
		t.Errorf("model uses %s, want the papers' features", got)
	}
	cfg.FeatureSet = "most"
	if err := runDetectTrain(cfg, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "--features") {
		t.Errorf("unknown feature set: err = %v", err)
	}
}
