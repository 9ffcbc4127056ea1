package fwd

import (
	"testing"

	"github.com/adaptio/adaptio/sched"
)

// The spread policy step by step: a batch of a busy file is held while
// others go; it goes first once its file is idle, or when nothing else is
// dispatchable; at most max are held, the oldest leaving first.
func TestSpread(t *testing.T) {
	jb := func(id, file uint64) *job { return &job{batch: sched.Batch{ID: id, File: file}} }
	id := func(j *job) int {
		if j == nil {
			return 0
		}
		return int(j.batch.ID)
	}
	type step struct {
		do   string // offer, ready, oldest, done
		id   uint64 // offer: batch id
		file uint64 // offer, done: file
		want int    // id of the batch to dispatch (0: none)
	}
	for _, tt := range []struct {
		name  string
		max   int
		steps []step
	}{
		{"idle files go at once", 4, []step{
			{"offer", 1, 10, 1}, {"offer", 2, 20, 2}, {"ready", 0, 0, 0},
		}},
		{"busy file held, others overtake", 4, []step{
			{"offer", 1, 10, 1}, {"offer", 2, 10, 0}, {"offer", 3, 10, 0}, {"offer", 4, 20, 4},
			{"ready", 0, 0, 0}, {"done", 0, 10, 0}, {"ready", 0, 0, 2}, {"ready", 0, 0, 0},
		}},
		{"work-conserving when nothing else", 4, []step{
			{"offer", 1, 10, 1}, {"offer", 2, 10, 0}, {"offer", 3, 10, 0},
			{"oldest", 0, 0, 2}, {"oldest", 0, 0, 3}, {"oldest", 0, 0, 0},
		}},
		{"bound: the oldest leaves", 2, []step{
			{"offer", 1, 10, 1}, {"offer", 2, 10, 0}, {"offer", 3, 10, 0}, {"offer", 4, 10, 2},
			{"oldest", 0, 0, 3}, {"oldest", 0, 0, 4},
		}},
		{"ready keeps order among idle files", 4, []step{
			{"offer", 1, 10, 1}, {"offer", 2, 20, 2}, {"offer", 3, 20, 0}, {"offer", 4, 10, 0}, {"offer", 5, 20, 0},
			{"done", 0, 20, 0}, {"ready", 0, 0, 3}, {"ready", 0, 0, 0}, {"done", 0, 10, 0}, {"ready", 0, 0, 4},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSpread(tt.max)
			for i, st := range tt.steps {
				var got *job
				switch st.do {
				case "offer":
					got = s.offer(jb(st.id, st.file))
				case "ready":
					got = s.ready()
				case "oldest":
					got = s.oldest()
				case "done":
					s.done(st.file)
				}
				if got != nil {
					s.started(got.batch.File)
				}
				if id(got) != st.want {
					t.Fatalf("step %d (%s %d): dispatch %d, want %d", i, st.do, st.id, id(got), st.want)
				}
			}
		})
	}
}
