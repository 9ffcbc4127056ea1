package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestTuneFlagsCheck(t *testing.T) {
	for _, tt := range []struct {
		cfg  tuneConfig
		fail string
	}{
		{tuneConfig{"off", 0}, ""},
		{tuneConfig{"iopathtune", 10 * time.Second}, ""},
		{tuneConfig{"dqn", time.Second}, ""},
		{tuneConfig{"capes", time.Second}, "--tune \"capes\""},
		{tuneConfig{"iopathtune", 0}, "--tune-interval"},
	} {
		err := tt.cfg.check()
		if (err == nil) != (tt.fail == "") || err != nil && !strings.Contains(err.Error(), tt.fail) {
			t.Errorf("%+v: %v, want an error naming %q", tt.cfg, err, tt.fail)
		}
	}
}

func TestEvalTuneRefusesBadSequences(t *testing.T) {
	for _, seq := range []string{"x", "0", "13", "1,,2"} {
		cmd := newEvalTuneCmd()
		cmd.SetArgs([]string{"--sequence", seq, "--out", t.TempDir()})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil {
			t.Errorf("--sequence %q accepted", seq)
		}
	}
}
