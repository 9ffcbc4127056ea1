package service

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adaptio/adaptio/council"
)

// DefaultHealthRounds is Options.HealthRounds' default.
const DefaultHealthRounds = 3

// nodeSeen is when a node last reported, and its interval.
type nodeSeen struct {
	at time.Time
	iv time.Duration
}

// persistState is the outcome of the latest writes of the learned state.
type persistState struct {
	round uint64 // round of the latest snapshot written
	err   error  // the latest write's error (nil: it succeeded)
	at    time.Time
}

// noteReport records that node reported an interval of length iv. Called
// with s.mu held.
func (s *Service) noteReport(r council.Report) {
	if s.seen == nil {
		s.seen = map[int]nodeSeen{}
	}
	iv := r.Obs.Interval
	if iv <= 0 {
		iv = time.Second
	}
	s.seen[r.Obs.Node] = nodeSeen{at: time.Now(), iv: iv}
}

// notePersist records the outcome of writing snap.
func (s *Service) notePersist(snap []byte, err error) {
	var head struct {
		Round uint64 `json:"round"`
	}
	_ = json.Unmarshal(snap, &head)
	s.pmu.Lock()
	defer s.pmu.Unlock()
	s.persisted.err, s.persisted.at = err, time.Now()
	if err == nil {
		s.persisted.round = max(s.persisted.round, head.Round)
	}
}

// Health returns why the Council is degraded (nil: healthy): not connected
// to NATS; learned state that cannot be persisted (the last write to KV
// failed, or the state written is more than Options.HealthRounds rounds
// old); known I/O nodes that sent no report for HealthRounds of their
// intervals, named.
func (s *Service) Health() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.healthLocked(time.Now())
}

func (s *Service) healthLocked(now time.Time) []string {
	var why []string
	if s.nc == nil || !s.nc.IsConnected() {
		why = append(why, "not connected to NATS")
	}
	n := s.opts.HealthRounds
	s.pmu.Lock()
	p := s.persisted
	s.pmu.Unlock()
	round := s.core.Round()
	switch {
	case p.err != nil:
		why = append(why, fmt.Sprintf("learned state not persisted: the last write to KV bucket %s failed %v ago (%v); state written last at round %d, now round %d",
			s.opts.Bucket, now.Sub(p.at).Round(time.Millisecond), p.err, p.round, round))
	case round > p.round+uint64(n):
		why = append(why, fmt.Sprintf("learned state not persisted: written last at round %d, now round %d (more than %d rounds behind)", p.round, round, n))
	}
	var silent []string
	ids := make([]int, 0, len(s.seen)+s.opts.Core.Nodes)
	for id := range s.seen {
		ids = append(ids, id)
	}
	for id := range s.opts.Core.Nodes {
		if _, ok := s.seen[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		seen, ok := s.seen[id]
		if !ok {
			// Expected from the start (Options.Core.Nodes), never heard.
			seen = nodeSeen{at: s.t0, iv: time.Second}
		}
		if since := now.Sub(seen.at); since > time.Duration(n)*seen.iv {
			what := strconv.Itoa(id) + " (" + since.Round(100*time.Millisecond).String() + ")"
			if !ok {
				what = strconv.Itoa(id) + " (never)"
			}
			silent = append(silent, what)
		}
	}
	if len(silent) > 0 {
		why = append(why, fmt.Sprintf("no report for %d intervals from I/O node %s", n, strings.Join(silent, ", ")))
	}
	return why
}

// serveHealth is /healthz: "ok" (200), or "degraded" and one reason a
// line (503).
func (s *Service) serveHealth(w http.ResponseWriter, _ *http.Request) {
	why := s.Health()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if len(why) == 0 {
		io.WriteString(w, "ok\n")
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	io.WriteString(w, "degraded\n")
	for _, r := range why {
		io.WriteString(w, "- "+r+"\n")
	}
}
