//go:build race

package eval

// raceEnabled is true when the tests run with -race: the long statistical
// tests then skip, since they run without it in the same suite
// (scripts/test) and exercise no concurrency.
const raceEnabled = true
