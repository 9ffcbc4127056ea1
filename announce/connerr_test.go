package announce

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// Failed connection attempts are logged once per distinct error, not once
// per attempt (the client retries every 200 ms).
func TestConnErrLogRateLimits(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var l connErrLog
	auth := errors.New("nats: Authorization Violation")
	for range 10 {
		l.warn(log, "cannot reach", auth)
	}
	l.warn(log, "cannot reach", errors.New("dial tcp: connection refused"))
	l.warn(log, "cannot reach", nil)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "Authorization Violation") || !strings.Contains(lines[1], "connection refused") {
		t.Fatalf("logged %d lines, want one per distinct error:\n%s", len(lines), buf.String())
	}
}
