package webhook

// This file defines a rule's admission queue: admissions wait, in the order they came, for
// one of the rule's workers, up to their deadline; one that the queue's measured pace says
// cannot be served in time is refused at once, so that it neither waits for nothing nor
// holds a slot that another rule's admission could use.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// A queue lets at most n admissions run a rule's overlays at once, n being the rule's
// workers, and has the others wait in order.
type queue struct {
	n int

	mu      sync.Mutex
	waiting []*waiter           // the admissions waiting, oldest first
	running map[*ticket]bool    // the admissions running the overlays
	service time.Duration       // the measured time an admission runs the overlays (moving average)
	granted int                 // the turns given so far
	waited  func(time.Duration) // observes each admission's wait, if not nil
}

// A waiter is an admission waiting in a queue. Its turn comes with t set, and granted closed.
type waiter struct {
	granted chan struct{}
	t       *ticket
}

// A ticket is an admission's turn at the overlays.
type ticket struct {
	q     *queue
	start time.Time
	// first says it is one of the first n turns, one per worker, which start the workers and
	// compile the overlays in them: their time is not the rule's pace.
	first bool
}

// grant gives a turn that starts now. q.mu is held.
func (q *queue) grant() *ticket {
	t := &ticket{q: q, start: time.Now(), first: q.granted < q.n}
	q.granted++
	q.running[t] = true
	return t
}

// newQueue returns a queue of n admissions at once.
func newQueue(n int, waited func(time.Duration)) *queue {
	return &queue{n: max(n, 1), running: make(map[*ticket]bool), waited: waited}
}

// A slowError is the refusal of an admission that the queue cannot serve by its deadline.
type slowError struct {
	ahead   int           // the admissions waiting before it
	n       int           // the rule's workers
	service time.Duration // what one admission takes, as measured
	left    time.Duration // the time the admission had left
}

func (e *slowError) Error() string {
	return fmt.Sprintf("cannot be served within the admission's deadline: %d admissions wait for the rule's %d workers, "+
		"each takes about %v, and %v were left", e.ahead, e.n, e.service.Round(time.Millisecond), e.left.Round(time.Millisecond))
}

// estimate returns what one admission takes to run the overlays: the measured average, or,
// when every worker has been busy for longer on turns past their first, the time the youngest
// has been. q.mu is held.
func (q *queue) estimate(now time.Time) time.Duration {
	s := q.service
	if len(q.running) >= q.n {
		youngest := time.Duration(1<<63 - 1)
		for t := range q.running {
			if t.first {
				return s
			}
			youngest = min(youngest, now.Sub(t.start))
		}
		s = max(s, youngest)
	}
	return s
}

// acquire waits for the admission's turn, until ctx's deadline at most, and returns its ticket,
// which the caller gives back with release. It returns a *slowError at once if the admissions
// waiting before it would, at the measured pace, take longer than the time it has left, and
// an error that wraps ctx.Err() if ctx ends while it waits.
func (q *queue) acquire(ctx context.Context) (*ticket, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("waiting for a worker of the rule: %w", err)
	}
	arrived := time.Now()
	q.mu.Lock()
	if len(q.running) < q.n && len(q.waiting) == 0 {
		t := q.grant()
		q.mu.Unlock()
		q.observe(0)
		return t, nil
	}
	if deadline, ok := ctx.Deadline(); ok {
		s := q.estimate(arrived)
		ahead := len(q.waiting)
		// It gets a worker after the ones ahead of it and one more have finished, n at a
		// time, and then takes its own time.
		need := time.Duration(float64(s)*float64(ahead+1)/float64(q.n)) + s
		if left := deadline.Sub(arrived); need > left {
			q.mu.Unlock()
			return nil, &slowError{ahead: ahead, n: q.n, service: s, left: left}
		}
	}
	w := &waiter{granted: make(chan struct{})}
	q.waiting = append(q.waiting, w)
	q.mu.Unlock()
	select {
	case <-w.granted:
	case <-ctx.Done():
		q.mu.Lock()
		i := slices.Index(q.waiting, w)
		if i >= 0 {
			q.waiting = slices.Delete(q.waiting, i, i+1)
		}
		q.mu.Unlock()
		if i < 0 {
			// Its turn came as ctx ended: the turn goes to the next.
			<-w.granted
			w.t.release(false)
		}
		return nil, fmt.Errorf("waiting for a worker of the rule: %w", ctx.Err())
	}
	q.observe(w.t.start.Sub(arrived))
	return w.t, nil
}

func (q *queue) observe(d time.Duration) {
	if q.waited != nil {
		q.waited(d)
	}
}

// release ends the ticket's turn and gives it to the oldest admission waiting. measured says
// whether the turn's time counts in the measured pace.
func (t *ticket) release(measured bool) {
	q := t.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.running[t] {
		return
	}
	delete(q.running, t)
	if measured && !t.first {
		d := time.Since(t.start)
		if q.service == 0 {
			q.service = d
		} else {
			q.service += (d - q.service) / 8
		}
	}
	if len(q.waiting) > 0 {
		w := q.waiting[0]
		q.waiting = slices.Delete(q.waiting, 0, 1)
		w.t = q.grant()
		close(w.granted)
	}
}

// stats returns the admissions running and waiting.
func (q *queue) stats() (running, waiting int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.running), len(q.waiting)
}
