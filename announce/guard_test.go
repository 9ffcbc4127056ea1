package announce

import (
	"errors"
	"testing"
	"time"

	"github.com/adaptio/adaptio/council/councilmsg"
)

func TestGuard(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	dec := func(epoch, round uint64, at time.Duration) councilmsg.Decision {
		d := councilmsg.Decision{Round: round, Window: time.Millisecond, Prob: 1, Epoch: epoch}
		if epoch != 0 {
			d.Time = t0.Add(at)
		}
		return d
	}
	type step struct {
		d    councilmsg.Decision
		now  time.Duration // receipt time, from t0
		want error         // nil: admitted
	}
	tests := []struct {
		name    string
		require bool
		steps   []step
	}{
		{"rounds move forward", true, []step{
			{dec(7, 500, 0), 0, nil}, // a node's first decision: any round (rounds survive restarts)
			{dec(7, 501, time.Second), time.Second, nil},
			{dec(7, 501, time.Second), 2 * time.Second, ErrReplay}, // the same again
			{dec(7, 500, 0), 2 * time.Second, ErrReplay},           // an older one
			{dec(7, 502, 2*time.Second), 2 * time.Second, nil},
		}},
		{"far-future round", true, []step{
			{dec(7, 10, 0), 0, nil},
			{dec(7, 999999999, time.Second), time.Second, ErrJump}, // 1 s allows 1000 + 16 rounds
			{dec(7, 10+1016, time.Second), time.Second, nil},
		}},
		{"freshness", true, []step{
			{dec(7, 1, 0), 31 * time.Second, ErrStale},
			{dec(7, 1, 10*time.Second), 0, ErrFuture},
			{dec(7, 1, 4*time.Second), 0, nil}, // within the skew allowance
		}},
		{"new epoch only when made later", true, []step{
			{dec(7, 40, 10*time.Second), 10 * time.Second, nil},
			{dec(8, 1, 11*time.Second), 11 * time.Second, nil},        // a restarted Council, fresh state
			{dec(7, 41, 10*time.Second), 12 * time.Second, ErrReplay}, // the old epoch's, captured and replayed
			{dec(8, 2, 12*time.Second), 12 * time.Second, nil},
		}},
		{"stamp required with a keyring", true, []step{
			{dec(0, 3, 0), 0, ErrUnstamped},
		}},
		{"unstamped decisions without a keyring", false, []step{
			{dec(0, 3, 0), 0, nil},
			{dec(0, 3, 0), 0, ErrReplay},
			{dec(0, 1, 0), 0, nil}, // an old Council restarted without its state
			{dec(9, 2, 0), 0, nil}, // then a stamped one
			{dec(9, 2, 0), 0, ErrReplay},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewGuard(Freshness{RequireStamp: tt.require})
			for i, s := range tt.steps {
				err := g.Admit(s.d, t0.Add(s.now))
				if (s.want == nil) != (err == nil) || (s.want != nil && !errors.Is(err, s.want)) {
					t.Fatalf("step %d (epoch %d round %d): got %v, want %v", i, s.d.Epoch, s.d.Round, err, s.want)
				}
				if err != nil && RejectReason(err) == "other" {
					t.Fatalf("step %d: unlabelled error %v", i, err)
				}
			}
		})
	}
}
