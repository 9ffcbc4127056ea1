// Package rw is the vocabulary every layer shares for the direction of an
// I/O request: read or write. It is a leaf package, so the cores (schedulers,
// detectors, data-server and disk models, workloads) and the shells (wire
// formats, datasets, reports) name an operation without importing each other.
package rw

import (
	"errors"
	"fmt"
)

// Op is the operation of a request. The zero value is invalid, so a request
// that was never filled in is rejected rather than silently treated as a read.
type Op uint8

const (
	Read  Op = 1
	Write Op = 2
)

// ErrBadOp reports an operation that is neither read nor write.
var ErrBadOp = errors.New("unknown operation")

// String returns "read" or "write" (or "op(N)" for an invalid value).
func (o Op) String() string {
	switch o {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Valid reports whether o is Read or Write.
func (o Op) Valid() bool { return o == Read || o == Write }

// ParseOp parses "read" or "write" (also "r", "w" and their capitalised
// forms).
func ParseOp(s string) (Op, error) {
	switch s {
	case "read", "r", "READ", "Read":
		return Read, nil
	case "write", "w", "WRITE", "Write":
		return Write, nil
	}
	return 0, fmt.Errorf("%w: %q", ErrBadOp, s)
}

// Pair holds one value for each direction: reads' and writes'.
type Pair[T any] struct {
	Read, Write T
}

// For returns the value for op (the zero value for an invalid op).
func (p Pair[T]) For(op Op) T {
	switch op {
	case Read:
		return p.Read
	case Write:
		return p.Write
	}
	var zero T
	return zero
}
