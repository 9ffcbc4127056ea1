package workload

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize parses a positive byte count with an optional binary suffix:
// "4096", "10B", "32k", "32KiB", "1m", "1MiB", "4g", "4GiB", "1t" (k, m, g, t
// are powers of 1024). Every size flag of the adaptio commands goes through it.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "ib"), "b")
	mult := int64(1)
	if t != "" {
		switch t[len(t)-1] {
		case 'k':
			mult = 1 << 10
		case 'm':
			mult = 1 << 20
		case 'g':
			mult = 1 << 30
		case 't':
			mult = 1 << 40
		}
		if mult != 1 {
			t = t[:len(t)-1]
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v <= 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("workload: bad size %q (want a positive count such as 4096, 32KiB, 1MiB, 4GiB)", s)
	}
	return v * mult, nil
}
