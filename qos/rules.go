package qos

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/adaptio/adaptio/rw"
)

// ErrBadRule is wrapped by every error of Parse and Validate.
var ErrBadRule = errors.New("qos: bad rule")

// MaxWeight is the largest weight a rule may give.
const MaxWeight = 1000

// MaxJobLen is the longest job id a rule or a request may carry, in bytes.
const MaxJobLen = 255

// Any is the job of a rule that applies to every job.
const Any = "*"

// Rule is one QoS rule. Op 0 applies to reads and writes.
type Rule struct {
	Job    string  // job id, or Any
	Op     rw.Op   // rw.Read, rw.Write, or 0: both
	Rate   float64 // bytes per second; 0: uncapped
	Burst  int64   // bucket depth in bytes (0 with a Rate: DefaultBurst)
	Weight int     // share under saturation (0: not set by this rule)
}

// DefaultBurst is the bucket depth of a rule that sets a rate and no burst:
// 100 ms at the rate, at least 1 MiB.
func DefaultBurst(rate float64) int64 {
	return max(1<<20, int64(rate/10))
}

// Matches reports whether r applies to a request of job with operation op.
func (r Rule) Matches(job string, op rw.Op) bool {
	return (r.Job == Any || r.Job == job) && (r.Op == 0 || r.Op == op)
}

// String formats r in the syntax Parse reads.
func (r Rule) String() string {
	var b strings.Builder
	b.WriteString("job=" + r.Job)
	if r.Op != 0 {
		b.WriteString(" op=" + r.Op.String())
	}
	if r.Rate > 0 {
		b.WriteString(" rate=" + strconv.FormatFloat(r.Rate, 'f', -1, 64))
	}
	if r.Burst > 0 {
		b.WriteString(" burst=" + strconv.FormatInt(r.Burst, 10))
	}
	if r.Weight > 0 {
		b.WriteString(" weight=" + strconv.Itoa(r.Weight))
	}
	return b.String()
}

// Validate checks one rule: a job id of 1 to MaxJobLen printable bytes
// without spaces, '=', ';' or '#', a known op, a rate that is finite and
// not negative, a burst not negative, a weight from 0 to MaxWeight, and a
// rate or a weight set.
func (r Rule) Validate() error {
	if err := ValidJob(r.Job); err != nil {
		return err
	}
	if r.Op != 0 && !r.Op.Valid() {
		return fmt.Errorf("%w: op %d: use read, write or any", ErrBadRule, r.Op)
	}
	if r.Rate < 0 || math.IsNaN(r.Rate) || math.IsInf(r.Rate, 0) {
		return fmt.Errorf("%w: rate %v: a rate is a positive number of bytes per second", ErrBadRule, r.Rate)
	}
	if r.Burst < 0 {
		return fmt.Errorf("%w: burst %d: a burst is a positive number of bytes", ErrBadRule, r.Burst)
	}
	if r.Burst > 0 && r.Rate == 0 {
		return fmt.Errorf("%w: burst without a rate: set rate= too", ErrBadRule)
	}
	if r.Weight < 0 || r.Weight > MaxWeight {
		return fmt.Errorf("%w: weight %d: use 1 to %d", ErrBadRule, r.Weight, MaxWeight)
	}
	if r.Rate == 0 && r.Weight == 0 {
		return fmt.Errorf("%w: job=%s sets neither rate= nor weight=: a rule must set one", ErrBadRule, r.Job)
	}
	return nil
}

// ValidJob checks a job id as rules and the wire protocol accept it: 1 to
// MaxJobLen bytes, printable ASCII without spaces, '=', ';' or '#'. Any is
// valid (in a rule it matches every job).
func ValidJob(job string) error {
	if job == "" || len(job) > MaxJobLen {
		return fmt.Errorf("%w: job id %q: use 1 to %d characters", ErrBadRule, job, MaxJobLen)
	}
	for i := 0; i < len(job); i++ {
		c := job[i]
		if c <= ' ' || c > '~' || c == '=' || c == ';' || c == '#' {
			return fmt.Errorf("%w: job id %q: character %q not allowed (printable ASCII without spaces, '=', ';' or '#')", ErrBadRule, job, c)
		}
	}
	return nil
}

// Parse reads rules: one per line or separated by ';', fields key=value
// separated by spaces or tabs, '#' to the end of the line a comment (see the
// package documentation). Errors name the rule's line and field and wrap
// ErrBadRule; on error no rules are returned.
func Parse(src string) ([]Rule, error) {
	var rules []Rule
	for ln, line := range strings.Split(src, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, text := range strings.Split(line, ";") {
			if strings.TrimSpace(text) == "" {
				continue
			}
			r, err := parseRule(text)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", ln+1, err)
			}
			rules = append(rules, r)
		}
	}
	return rules, nil
}

func parseRule(text string) (Rule, error) {
	var r Rule
	seen := map[string]bool{}
	for _, f := range strings.Fields(text) {
		k, v, ok := strings.Cut(f, "=")
		if !ok || v == "" {
			return Rule{}, fmt.Errorf("%w: %q: fields are key=value (job=, op=, rate=, burst=, weight=)", ErrBadRule, f)
		}
		if seen[k] {
			return Rule{}, fmt.Errorf("%w: %s= given twice", ErrBadRule, k)
		}
		seen[k] = true
		var err error
		switch k {
		case "job":
			r.Job = v
			err = ValidJob(v)
		case "op":
			switch v {
			case "read":
				r.Op = rw.Read
			case "write":
				r.Op = rw.Write
			case "any":
				r.Op = 0
			default:
				err = fmt.Errorf("%w: op=%s: use read, write or any", ErrBadRule, v)
			}
		case "rate":
			var n int64
			n, err = ParseSize(v)
			if err == nil && n == 0 {
				err = fmt.Errorf("%w: rate=0: leave rate out for no cap", ErrBadRule)
			}
			r.Rate = float64(n)
		case "burst":
			r.Burst, err = ParseSize(v)
			if err == nil && r.Burst == 0 {
				err = fmt.Errorf("%w: burst=0: a burst is at least one byte", ErrBadRule)
			}
		case "weight":
			r.Weight, err = strconv.Atoi(v)
			if err != nil || r.Weight < 1 || r.Weight > MaxWeight {
				err = fmt.Errorf("%w: weight=%s: use a whole number from 1 to %d", ErrBadRule, v, MaxWeight)
			}
		default:
			err = fmt.Errorf("%w: unknown field %q: use job=, op=, rate=, burst=, weight=", ErrBadRule, k)
		}
		if err != nil {
			return Rule{}, err
		}
	}
	if r.Job == "" {
		return Rule{}, fmt.Errorf("%w: %q has no job=: name a job id or job=* for every job", ErrBadRule, strings.TrimSpace(text))
	}
	return r, r.Validate()
}

var units = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// ParseSize reads a byte count: a whole number with an optional suffix B,
// KB/MB/GB/TB (powers of 1000), KiB/MiB/GiB/TiB or K/M/G/T (powers of 1024).
// In a rate the count is per second ("200MiB": 200 MiB/s); a trailing "/s"
// is accepted.
func ParseSize(s string) (int64, error) {
	num := strings.TrimSuffix(s, "/s")
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSuffix(num, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %q: use a whole number of bytes with an optional unit (B, KB, MB, GB, KiB, MiB, GiB)", ErrBadRule, s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%w: %q: too large", ErrBadRule, s)
	}
	return n * mult, nil
}

// Format writes rules one per line in the syntax Parse reads.
func Format(rules []Rule) string {
	var b strings.Builder
	for _, r := range rules {
		b.WriteString(r.String())
		b.WriteByte('\n')
	}
	return b.String()
}
