package tune

import (
	"fmt"
	"slices"
	"strings"

	"github.com/adaptio/adaptio/tune/knob"
)

// LustreParam is one OSC parameter adaptio reads and sets, with the range
// a Lustre client accepts when it is written.
type LustreParam struct {
	Name     string
	Min, Max int
	Default  int    // Lustre's default (0: computed by the client at mount)
	Unit     string // what a unit of the value is
	Tuned    bool   // one of IOPathTune's knobs
}

// lustreTable is the one table of Lustre's ranges: the adapter refuses
// values outside it, the tuner's knobs (LustreKnobs) take their bounds
// from it, and `adaptio tune lustre --help` and docs/tuning.md print it
// (TestLustreRangesDocumented checks the docs).
//
// Sources: the Lustre client's store functions for these files (Lustre
// source, lustre/obdclass/lprocfs_status.c max_pages_per_rpc_store and
// lustre/osc/lproc_osc.c) and the Lustre Operations Manual, "Tuning the
// Client I/O RPC Stream":
//   - max_pages_per_rpc: 0 is refused (-ERANGE), and so is more than the
//     OST's bulk size (ocd_brw_size, at most PTLRPC_MAX_BRW_SIZE = 16 MiB,
//     4096 pages of 4 KiB); a value need not be a power of two, the client
//     rounds it up to its chunk (the OST's block size). An OST that grants
//     smaller RPCs (1 or 4 MiB) refuses more: the set fails, all or
//     nothing (SetAll), and the tuner lowers its bound to what was taken.
//     A written value of 1 MiB or more is read as bytes, which the range
//     keeps adaptio from writing.
//   - max_rpcs_in_flight: 1 to OSC_MAX_RIF_MAX = 256, default 8.
//   - max_dirty_mb: more than 0 and less than OSC_MAX_DIRTY_MB_MAX = 2048
//     (and at most a quarter of the client's RAM, which the client checks).
//
// Pages are of 4 KiB (x86-64); a client with 64 KiB pages takes at most
// 256 pages per RPC and refuses more.
var lustreTable = []LustreParam{
	{Name: "max_dirty_mb", Min: 1, Max: 2047, Unit: "MiB"},
	{Name: "max_pages_per_rpc", Min: 1, Max: 4096, Default: 256, Unit: "pages of 4 KiB", Tuned: true},
	{Name: "max_rpcs_in_flight", Min: 1, Max: 256, Default: 8, Unit: "RPCs", Tuned: true},
}

// LustreParams lists the parameters adaptio knows, sorted.
func LustreParams() []string {
	var out []string
	for _, p := range lustreTable {
		out = append(out, p.Name)
	}
	return out
}

// LustreRange returns parameter name's entry of the table.
func LustreRange(name string) (LustreParam, bool) {
	i := slices.IndexFunc(lustreTable, func(p LustreParam) bool { return p.Name == name })
	if i < 0 {
		return LustreParam{}, false
	}
	return lustreTable[i], true
}

// LustreRanges describes the table in one line, for help texts:
// "max_dirty_mb 1-2047 MiB, max_pages_per_rpc 1-4096 pages of 4 KiB, ...".
func LustreRanges() string {
	var parts []string
	for _, p := range lustreTable {
		parts = append(parts, p.Describe())
	}
	return strings.Join(parts, ", ")
}

// Describe is the parameter's range in words ("max_rpcs_in_flight 1-256
// RPCs (default 8)").
func (p LustreParam) Describe() string {
	s := fmt.Sprintf("%s %d-%d %s", p.Name, p.Min, p.Max, p.Unit)
	if p.Default != 0 {
		s += fmt.Sprintf(" (default %d)", p.Default)
	}
	return s
}

// CheckLustre returns an error if v is not a value Lustre accepts for
// parameter name. Every write adaptio makes, and every dry run, goes
// through it.
func CheckLustre(name string, v int) error {
	p, ok := LustreRange(name)
	if !ok {
		return fmt.Errorf("tune: unknown Lustre parameter %q (known: %v)", name, LustreParams())
	}
	if v < p.Min || v > p.Max {
		return fmt.Errorf("tune: %s = %d outside Lustre's range [%d, %d] %s", name, v, p.Min, p.Max, p.Unit)
	}
	return nil
}

// LustreKnobs are IOPathTune's two knobs at Lustre's defaults, with the
// bounds of the table.
func LustreKnobs() []knob.Knob {
	var out []knob.Knob
	for _, p := range lustreTable {
		if p.Tuned {
			out = append(out, knob.Knob{Name: p.Name, Value: p.Default, Min: p.Min, Max: p.Max})
		}
	}
	return out
}
