package redisstore

// PipelinesInFlight is how many of l's AllowBoth and AllowThree pipelines
// are in flight, to any node.
func PipelinesInFlight(l *Limiter) int {
	n := 0
	count := func(b *batcher) {
		b.mu.Lock()
		defer b.mu.Unlock()
		n += b.running
	}
	count(&l.batch)
	l.nodeBatch.Range(func(_, b any) bool {
		count(b.(*batcher))
		return true
	})
	return n
}
