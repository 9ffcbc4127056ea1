package lustre

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/adaptio/adaptio/tune"
)

// Lustre is a Lustre client's OSC parameters, read and set through its
// parameter tree under Root ("/" on a client; tests use a directory laid
// out the same way). The parameters live in sys/fs/lustre/osc/TARGET
// (proc/fs/lustre/osc/TARGET on old clients); rpc_stats in
// proc/fs/lustre/osc/TARGET (Lustre 2.12) or
// sys/kernel/debug/lustre/osc/TARGET (newer clients). Each file is looked
// up in every place it can be.
type Lustre struct {
	Root string
	// write replaces the write of a value to a parameter file (nil: the
	// file is written); tests make rollbacks fail with it.
	write func(path string, v int) error
}

// Where a parameter, and rpc_stats, can be, relative to Root.
var (
	lustreParamDirs = []string{"sys/fs/lustre/osc", "proc/fs/lustre/osc"}
	lustreStatsDirs = []string{"proc/fs/lustre/osc", "sys/kernel/debug/lustre/osc", "sys/fs/lustre/osc"}
)

// ErrNoLustre is returned when Root holds no OSC target.
var ErrNoLustre = errors.New("tune: no Lustre OSC target")

// Targets lists the OSC targets (e.g. "lustre-OST0000-osc-ffff8800")
// found in any of the places, sorted.
func (l Lustre) Targets() ([]string, error) {
	seen := map[string]bool{}
	for _, dir := range append(slices.Clone(lustreParamDirs), lustreStatsDirs...) {
		ents, err := os.ReadDir(filepath.Join(l.Root, dir))
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
				seen[e.Name()] = true
			}
		}
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("%w under %s (looked in %s): is this a Lustre client? --root points at another tree",
			ErrNoLustre, l.Root, strings.Join(append(slices.Clone(lustreParamDirs), lustreStatsDirs[1]), ", "))
	}
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	slices.Sort(out)
	return out, nil
}

// find returns the first of dirs/target/name that exists.
func (l Lustre) find(target, name string, dirs []string) (string, error) {
	var tried []string
	for _, d := range dirs {
		p := filepath.Join(l.Root, d, target, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		tried = append(tried, filepath.Join(d, target, name))
	}
	return "", fmt.Errorf("tune: %s of %s not found (looked for %s under %s)", name, target, strings.Join(tried, ", "), l.Root)
}

// Get reads parameter name of target. An unreadable file or a value that
// is not a whole number is an error naming the file and what it holds.
func (l Lustre) Get(target, name string) (int, error) {
	if _, ok := tune.LustreRange(name); !ok {
		return 0, fmt.Errorf("tune: unknown Lustre parameter %q (known: %v)", name, tune.LustreParams())
	}
	path, err := l.find(target, name, lustreParamDirs)
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("tune: reading %s of %s: %w", name, target, err)
	}
	s := strings.TrimSpace(string(b))
	v, err := strconv.Atoi(s)
	if err != nil {
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		return 0, fmt.Errorf("tune: %s of %s holds %q, not a whole number (%s)", name, target, s, path)
	}
	return v, nil
}

// Set writes parameter name of target, refusing a value outside Lustre's
// range (CheckLustre).
func (l Lustre) Set(target, name string, v int) error {
	if err := tune.CheckLustre(name, v); err != nil {
		return err
	}
	path, err := l.find(target, name, lustreParamDirs)
	if err != nil {
		return err
	}
	if l.write != nil {
		err = l.write(path, v)
	} else {
		err = writeParam(path, v)
	}
	if err != nil {
		return fmt.Errorf("tune: setting %s of %s to %d: %w", name, target, v, err)
	}
	return nil
}

// writeParam writes v to an existing parameter file, as `lctl set_param`
// does (one write; the kernel refuses a value it does not take).
func writeParam(path string, v int) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strconv.Itoa(v) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// LustreValue is one parameter of one target as read: its value, or why
// it could not be read.
type LustreValue struct {
	Target, Name string
	Value        int
	Err          error
}

// Read reads every parameter of the table on target; none is left out:
// one that cannot be read, or is not a number, carries its error.
func (l Lustre) Read(target string) []LustreValue {
	var out []LustreValue
	for _, name := range tune.LustreParams() {
		v, err := l.Get(target, name)
		out = append(out, LustreValue{Target: target, Name: name, Value: v, Err: err})
	}
	return out
}

// LustreWrite is one value to write to one target's parameter.
type LustreWrite struct {
	Target, Name string
	Value        int
}

// LustreChange is a parameter of a target changed from Old to New.
type LustreChange struct {
	Target, Name string
	Old, New     int
}

// SetError is SetAll's failure: the write that failed, and where the
// rollback left every target it had changed.
type SetError struct {
	Failed LustreWrite
	Err    error
	// RolledBack are the writes undone (each back at Old); Stuck those
	// whose rollback failed: the target still holds New.
	RolledBack []LustreChange
	Stuck      []LustreChange
	StuckErrs  []error
}

func (e *SetError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tune: setting %s=%d on %s failed: %v", e.Failed.Name, e.Failed.Value, e.Failed.Target, e.Err)
	if len(e.RolledBack) == 0 && len(e.Stuck) == 0 {
		b.WriteString("; nothing had been changed")
	}
	for _, c := range e.RolledBack {
		fmt.Fprintf(&b, "; %s %s put back to %d", c.Target, c.Name, c.Old)
	}
	for i, c := range e.Stuck {
		fmt.Fprintf(&b, "; ROLLBACK FAILED: %s holds %s=%d, not its old %d (%v): set it by hand", c.Target, c.Name, c.New, c.Old, e.StuckErrs[i])
	}
	return b.String()
}

func (e *SetError) Unwrap() error { return e.Err }

// SetAll writes every value or none: it checks every value against
// Lustre's ranges and reads every old value first (any failure: nothing
// is written), then writes them in order; if a write fails it puts back,
// in reverse order, the values already written and returns a *SetError
// saying what holds what. A value equal to the old one is not written.
// It returns the changes made.
func (l Lustre) SetAll(ws []LustreWrite) ([]LustreChange, error) {
	for _, w := range ws {
		if err := tune.CheckLustre(w.Name, w.Value); err != nil {
			return nil, fmt.Errorf("%w (on %s; nothing changed)", err, w.Target)
		}
	}
	plan := make([]LustreChange, 0, len(ws))
	for _, w := range ws {
		old, err := l.Get(w.Target, w.Name)
		if err != nil {
			return nil, fmt.Errorf("%w (nothing changed)", err)
		}
		plan = append(plan, LustreChange{Target: w.Target, Name: w.Name, Old: old, New: w.Value})
	}
	var done []LustreChange
	for i, c := range plan {
		if c.Old == c.New {
			continue
		}
		if err := l.Set(c.Target, c.Name, c.New); err != nil {
			se := &SetError{Failed: ws[i], Err: err}
			for j := len(done) - 1; j >= 0; j-- {
				d := done[j]
				if rerr := l.Set(d.Target, d.Name, d.Old); rerr != nil {
					se.Stuck = append(se.Stuck, d)
					se.StuckErrs = append(se.StuckErrs, rerr)
				} else {
					se.RolledBack = append(se.RolledBack, d)
				}
			}
			return nil, se
		}
		done = append(done, c)
	}
	return done, nil
}

// ReadRPCStats reads and parses target's rpc_stats, wherever the client
// keeps it; it returns the file's path too.
func (l Lustre) ReadRPCStats(target string) (RPCStats, string, error) {
	path, err := l.find(target, "rpc_stats", lustreStatsDirs)
	if err != nil {
		return RPCStats{}, "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return RPCStats{}, path, fmt.Errorf("tune: reading rpc_stats of %s: %w", target, err)
	}
	s, err := ParseRPCStats(b)
	if err != nil {
		return s, path, fmt.Errorf("%w (%s)", err, path)
	}
	return s, path, nil
}
