package app

import (
	"context"
	"time"
)

// ChangeGap is the least time between a refresh and the next one a
// feed's change moment (a sale starting or ending, an item expiring)
// starts: a feed with such moments minute after minute is read again at
// most once a gap, and the moments passed meanwhile all count at that
// read. A moment is so served at most a gap (and a refresh's time) late,
// and an expired item as long: nothing filters items at answer time.
const ChangeGap = 5 * time.Minute

// every refreshes the catalog on each tick, and when the feeds' ads change
// though their bytes do not (changes), but not sooner than gap after the
// feeds were last read, until ctx ends, which also cuts a refresh short.
func (l *live) every(ctx context.Context, tick <-chan time.Time) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	var fired int64 // the change last refreshed for
	for {
		// A refresh at the feeds' next change, unless that refresh ran and
		// failed to read them (it is tried again at the next tick).
		var due <-chan time.Time
		at := l.changes.Load()
		when := max(at, l.readAt.Load()+int64(l.gap))
		now := l.now()
		if at != 0 && at != fired {
			timer.Reset(min(max(time.Duration(when-now.UnixNano()), 0), l.recheck))
			due = timer.C
		}
		if l.waiting != nil {
			l.waiting(now)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick:
			l.reload(ctx, false)
		case <-due:
			if l.now().UnixNano() >= when {
				fired = at
				l.reload(ctx, false)
			}
		case <-l.changed:
		}
	}
}
