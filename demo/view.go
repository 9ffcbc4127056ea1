package demo

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/adaptio/adaptio/demo/record"
	"github.com/adaptio/adaptio/demo/report"
)

// IsTerminal reports whether f is a character device (an interactive terminal).
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// View renders the live terminal view of a Recorder: on a terminal, a small
// screen redrawn in place each time Render is called (plain ANSI: cursor home
// and clear); elsewhere, one line per call.
type View struct {
	W    io.Writer
	TTY  bool
	Rec  *record.Recorder
	URL  string // dashboard address shown in the header ("" = none)
	last int    // seconds already shown (line mode)
}

func mib(b float64) string { return fmt.Sprintf("%.1f MiB/s", b/(1<<20)) }

// Render draws the current state.
func (v *View) Render() {
	d := v.Rec.Since(v.last, 1<<30, 1<<30, 1)
	if len(d.Seconds) == 0 && (!d.Done || !v.TTY) {
		return
	}
	v.last = d.Next[0]
	var sec record.Second
	if len(d.Seconds) > 0 {
		sec = d.Seconds[len(d.Seconds)-1]
	} else if s, ok := v.Rec.Latest(); ok {
		sec = s
	}
	snap := v.Rec.Since(0, max(d.Next[1]-8, 0), max(d.Next[2]-5, 0), 1)
	if v.TTY {
		fmt.Fprint(v.W, v.screen(d, sec, snap))
	} else {
		fmt.Fprintln(v.W, v.line(d, sec, snap))
	}
}

func decision(n record.NodeSecond, static bool) string {
	switch {
	case n.Pattern == "":
		return "-"
	case static:
		return "static"
	}
	if n.Explore {
		return "explore"
	}
	return "exploit"
}

func (v *View) line(d record.Delta, sec record.Second, snap record.Delta) string {
	var b strings.Builder
	fmt.Fprintf(&b, "t=%.0fs", sec.T)
	if sec.Phase != "" {
		fmt.Fprintf(&b, " [%s]", sec.Phase)
	}
	for _, n := range sec.Nodes {
		p := n.Pattern
		if p == "" {
			p = "idle"
		} else {
			p += "/" + n.Op
		}
		fmt.Fprintf(&b, " | n%d %s %s %s %s", n.Node, p, report.WindowLabel(n.Window), decision(n, d.Meta.StaticWindow > 0), mib(n.Bandwidth))
	}
	if k := len(snap.Iterations); k > 0 {
		it := snap.Iterations[k-1]
		fmt.Fprintf(&b, " | iteration %d %s %.2fs", it.K, it.Phase, it.Seconds)
	}
	fmt.Fprintf(&b, " | %s", progress(d))
	return b.String()
}

func (v *View) screen(d record.Delta, sec record.Second, snap record.Delta) string {
	var b strings.Builder
	b.WriteString("\x1b[H\x1b[2J")
	mode := "live stack"
	if d.Meta.Mode == "sim" {
		mode = "simulator, virtual time"
	}
	state := "running"
	if d.Done {
		state = "finished"
	}
	fmt.Fprintf(&b, "adaptio demo — %s — %s — t=%.0f s — %s\n", mode, state, sec.T, progress(d))
	if v.URL != "" {
		fmt.Fprintf(&b, "dashboard: %s   (Ctrl-C stops, saves learned state and writes the report)\n", v.URL)
	}
	if d.Meta.StaticWindow > 0 {
		fmt.Fprintf(&b, "static window %s (no learning)\n", report.WindowLabel(d.Meta.StaticWindow))
	} else if d.Meta.CarriedOver > 0 {
		fmt.Fprintf(&b, "learning continues: %d bandit pulls carried over from %s\n", d.Meta.CarriedOver, d.Meta.StateDir)
	}
	fmt.Fprintf(&b, "\nphase now: %s\n\n", orDash(sec.Phase))
	if d.Meta.StaticWindow == 0 {
		b.WriteString("decision: exploit = the window the Council values best for the pattern, explore = a window tried to learn;\n" +
			"p = the probability the bandit policy gave the window in force\n\n")
	}
	fmt.Fprintf(&b, "%-5s %-8s %-6s %-8s %-16s %14s\n", "node", "pattern", "op", "window", "decision", "bandwidth")
	for _, n := range sec.Nodes {
		dec := decision(n, d.Meta.StaticWindow > 0)
		if dec != "static" && n.Pattern != "" && n.Prob > 0 {
			dec += fmt.Sprintf(" p=%.2f", n.Prob)
		}
		if n.Explore {
			dec = "\x1b[31m" + fmt.Sprintf("%-16s", dec) + "\x1b[0m"
		} else {
			dec = fmt.Sprintf("%-16s", dec)
		}
		fmt.Fprintf(&b, "%-5d %-8s %-6s %-8s %s %14s\n", n.Node, orDash(n.Pattern), orDash(n.Op), report.WindowLabel(n.Window), dec, mib(n.Bandwidth))
	}
	if len(d.Estimates) > 0 && len(d.Meta.Windows) > 0 {
		b.WriteString("\nlearned (best window per pattern, pulls):")
		for _, e := range d.Estimates {
			var n int64
			for _, c := range e.Counts {
				n += c
			}
			fmt.Fprintf(&b, "  %s %s (%d)", e.Context, report.WindowLabel(d.Meta.Windows[min(max(e.Best, 0), len(d.Meta.Windows)-1)]), n)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nphases run (latest last):\n")
	for _, it := range snap.Iterations {
		fmt.Fprintf(&b, "  iteration %-4d %-10s %8.2f s\n", it.K, it.Phase, it.Seconds)
	}
	if len(snap.Events) > 0 {
		b.WriteString("\nevents:\n")
		for _, e := range snap.Events {
			fmt.Fprintf(&b, "  %6.0f s  %s\n", e.T, e.Text)
		}
	}
	return b.String()
}

// progress says how far the run has come, in experiment iterations (each
// one pass of every phase), with the time left once an iteration has
// ended; once they are done, the static-window comparison that runs on the
// stack after them counts its windows.
func progress(d record.Delta) string {
	p := d.Progress
	s := p.Text
	if p.Planned > 0 && p.Iterations >= p.Planned && d.Meta.StaticOn == d.Meta.Mode && d.Meta.StaticOn != "" && !d.Done {
		runs, again := 0, 0
		for _, r := range d.Static {
			if r.Window > 0 {
				runs++
			}
			if r.Confirmed {
				again++
			}
		}
		s += fmt.Sprintf("; static comparison: %d of %d windows run", runs, len(d.Meta.Windows))
		if again > 0 {
			s += fmt.Sprintf(", %d of them again", again)
		}
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
