// Package depcheck holds the test that keeps adaptio's packages in their
// layers: which package may link which, checked with `go list -json -deps`
// over the module (the rules are in depcheck_test.go, explained in
// docs/architecture.md, "Who imports whom"). It has no code of its own.
package depcheck
