package tune

import (
	"os"
	"strings"
	"testing"
)

// The tuner's knobs, the adapter's checks and the help take their ranges
// from one table.
func TestLustreRangesAreOneTable(t *testing.T) {
	for _, k := range LustreKnobs() {
		p, ok := LustreRange(k.Name)
		if !ok || k.Min != p.Min || k.Max != p.Max || k.Value != p.Default {
			t.Errorf("knob %+v, table %+v", k, p)
		}
		if CheckLustre(k.Name, k.Max) != nil || CheckLustre(k.Name, k.Max+1) == nil || CheckLustre(k.Name, k.Min-1) == nil {
			t.Errorf("%s: CheckLustre disagrees with the knob's range [%d, %d]", k.Name, k.Min, k.Max)
		}
		if !strings.Contains(LustreRanges(), p.Describe()) {
			t.Errorf("LustreRanges %q lacks %q", LustreRanges(), p.Describe())
		}
	}
	if p, _ := LustreRange("max_pages_per_rpc"); p.Max != 4096 {
		t.Errorf("max_pages_per_rpc up to %d pages, want 4096 (16 MiB of 4 KiB pages)", p.Max)
	}
}

// docs/tuning.md states every range of the table as Describe prints it.
func TestLustreRangesDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/tuning.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range LustreParams() {
		p, _ := LustreRange(name)
		if !strings.Contains(string(b), "`"+p.Describe()+"`") {
			t.Errorf("docs/tuning.md lacks `%s`", p.Describe())
		}
	}
}
