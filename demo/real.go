package demo

import (
	"context"

	"github.com/adaptio/adaptio/demo/record"
)

func runReal(ctx context.Context, cfg Config, rec *record.Recorder) error {
	return ErrNoRealStack
}
