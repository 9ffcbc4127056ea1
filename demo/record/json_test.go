package record

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// oldRecording is a recording as written when the windows' Go fields were
// microseconds: it must still load.
const oldRecording = `{"meta":{"mode":"sim","nodes":1,"windows_us":[125,8000],"static_us":4000,"policy":"egreedy"},
"seconds":[{"t":1,"phase":"SS write","nodes":[{"node":0,"pattern":"SS","op":"write","window_us":250,"explore":true,"prob":0.1,"bw":5}]}],
"static":[{"window_us":500,"label":"","phases":{"SS write":2},"total":2},{"window_us":0,"label":"learning","phases":{},"total":3}]}`

func TestRecordingJSONWindowsInMicroseconds(t *testing.T) {
	var r Recording
	if err := json.Unmarshal([]byte(oldRecording), &r); err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{125 * time.Microsecond, 8 * time.Millisecond}; !slices.Equal(r.Meta.Windows, want) {
		t.Errorf("Meta.Windows = %v, want %v", r.Meta.Windows, want)
	}
	if r.Meta.StaticWindow != 4*time.Millisecond || r.Meta.Mode != "sim" || r.Meta.Policy != "egreedy" {
		t.Errorf("Meta = %+v, want static window 4ms, mode sim, policy egreedy", r.Meta)
	}
	n := r.Seconds[0].Nodes[0]
	if n.Window != 250*time.Microsecond || n.Pattern != "SS" || !n.Explore || n.Bandwidth != 5 {
		t.Errorf("node second = %+v, want window 250µs, pattern SS, explore, bw 5", n)
	}
	if r.Static[0].Window != 500*time.Microsecond || r.Static[0].Total != 2 || r.Static[1].Window != 0 || r.Static[1].Label != "learning" {
		t.Errorf("static = %+v, want 500µs (total 2) then the learning row", r.Static)
	}

	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"windows_us":[125,8000]`, `"static_us":4000`, `"window_us":250`, `"window_us":500`, `"bw":5`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("written recording lacks %s:\n%s", want, b)
		}
	}
	var again Recording
	if err := json.Unmarshal(b, &again); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Meta.Windows, r.Meta.Windows) || again.Meta.StaticWindow != r.Meta.StaticWindow ||
		again.Seconds[0].Nodes[0] != n || again.Static[0].Window != r.Static[0].Window {
		t.Errorf("round trip changed the windows: got %+v, want %+v", again, r)
	}
}
