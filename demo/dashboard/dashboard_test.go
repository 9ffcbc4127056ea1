package dashboard

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/demo/record"
)

func get(t *testing.T, srv *httptest.Server, path string) (string, *http.Response) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), resp
}

func TestAssetsServedAndOffline(t *testing.T) {
	srv := httptest.NewServer(Handler(record.New(record.Meta{})))
	defer srv.Close()
	for _, p := range []string{"/", "/app.js", "/style.css"} {
		body, resp := get(t, srv, p)
		if resp.StatusCode != 200 || len(body) == 0 {
			t.Fatalf("GET %s: %d, %d bytes", p, resp.StatusCode, len(body))
		}
		for _, u := range regexp.MustCompile(`https?://[^"'\s)]+`).FindAllString(body, -1) {
			if u != "http://www.w3.org/2000/svg" {
				t.Errorf("%s references %s: the dashboard must work offline", p, u)
			}
		}
	}
	if body, _ := get(t, srv, "/"); !strings.Contains(body, `src="app.js"`) {
		t.Error("index does not load app.js")
	}
}

func TestStateIsIncremental(t *testing.T) {
	rec := record.New(record.Meta{Mode: "real", Nodes: 1})
	srv := httptest.NewServer(Handler(rec))
	defer srv.Close()
	for i := 1; i <= 5; i++ {
		rec.AddSecond(record.Second{T: float64(i), Nodes: []record.NodeSecond{{Node: 0, Pattern: "SS", Op: "write", Window: 250 * time.Microsecond}}})
	}
	rec.AddIteration(record.Iteration{Phase: "SS write", Seconds: 4})
	tests := []struct {
		query     string
		seconds   int
		its       int
		firstT    float64
		wantNext0 int
	}{
		{"", 5, 1, 1, 5},
		{"?s=3&i=1", 2, 0, 4, 5},
		{"?max=2", 2, 1, 4, 5},
		{"?s=junk", 5, 1, 1, 5},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			body, resp := get(t, srv, "/api/state"+tt.query)
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("content type %q", ct)
			}
			var d record.Delta
			if err := json.Unmarshal([]byte(body), &d); err != nil {
				t.Fatal(err)
			}
			if len(d.Seconds) != tt.seconds || len(d.Iterations) != tt.its || d.Next[0] != tt.wantNext0 {
				t.Fatalf("got %d seconds, %d iterations, next %v; want %d, %d, %d", len(d.Seconds), len(d.Iterations), d.Next, tt.seconds, tt.its, tt.wantNext0)
			}
			if d.Seconds[0].T != tt.firstT {
				t.Errorf("first second t=%v, want %v", d.Seconds[0].T, tt.firstT)
			}
		})
	}
}

// The page's status counts iterations as the terminal view and the report
// do: api/state carries the count (record.Progress), phase runs named apart.
func TestStateCountsIterations(t *testing.T) {
	rec := record.New(record.Meta{Mode: "real", Nodes: 1, Phases: []string{"SS write", "SS read"}, Iterations: 48})
	srv := httptest.NewServer(Handler(rec))
	defer srv.Close()
	for i, p := range []string{"SS write", "SS read", "SS write"} {
		rec.AddIteration(record.Iteration{Phase: p, Start: 5 * float64(i), Seconds: 5})
	}
	rec.SetElapsed(12)
	body, _ := get(t, srv, "/api/state")
	var d struct {
		Progress struct {
			Iterations int    `json:"iterations"`
			Planned    int    `json:"planned"`
			PhaseRuns  int    `json:"phase_runs"`
			Text       string `json:"text"`
		} `json:"progress"`
	}
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatal(err)
	}
	// One iteration of 10 s done, the second begun 2 s ago: 47 to go.
	if p := d.Progress; p.Iterations != 1 || p.Planned != 48 || p.PhaseRuns != 3 || p.Text != "1 of 48 iterations, about 8 min left" {
		t.Errorf("progress %+v; want 1 of 48 iterations, 3 phase runs, about 8 min left", p)
	}
}
