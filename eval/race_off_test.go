//go:build !race

package eval

// raceEnabled is true when the tests run with -race (race_on_test.go).
const raceEnabled = false
