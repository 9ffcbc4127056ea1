// Package deps pins, while the packages that use them are being written, the
// modules adaptio depends on, so go.mod lists them at their tested versions.
// It is removed once every module is imported by real code.
package deps

import (
	_ "github.com/hanwen/go-fuse/v2/fs"
	_ "github.com/nats-io/nats-server/v2/server"
	_ "github.com/nats-io/nats.go"
	_ "github.com/nats-io/nats.go/jetstream"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "github.com/spf13/cobra"
	_ "gonum.org/v1/gonum/mat"
	_ "gonum.org/v1/plot"
	_ "gonum.org/v1/plot/vg/vgsvg"
	_ "pgregory.net/rapid"
)
