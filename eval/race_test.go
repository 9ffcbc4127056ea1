package eval

import "testing"

// skipUnderRace skips a long statistical test under -race: it exercises no
// concurrency, and the suite runs it without the race detector too.
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("long statistical test without concurrency: run without -race (scripts/test does)")
	}
}

// SkipUnderRace is skipUnderRace for the external tests (package eval_test).
var SkipUnderRace = skipUnderRace
