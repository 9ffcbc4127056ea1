package eval_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/adaptio/adaptio/eval"
)

// The selection evaluation runs the twelve tests under each algorithm and
// dynamic selection, and writes its table and report.
func TestSelectEvaluationRunsEveryTest(t *testing.T) {
	out := t.TempDir()
	rows, err := eval.RunSelect(context.Background(), eval.SelectConfig{Total: 8 << 20, Repeat: 1, IONodes: 2, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 12 {
		t.Fatalf("%d tests, want seed 003's 12", len(rows))
	}
	for _, r := range rows {
		if len(r.Static) != 5 || r.Best == "" || r.Dynamic <= 0 || r.Static[r.Best] > r.Static["noop"] {
			t.Errorf("%s: %+v", r.Test, r)
		}
	}
	for _, f := range []string{"select.csv", "report.html"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}
