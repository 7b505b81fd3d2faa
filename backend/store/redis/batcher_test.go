package redisstore

import (
	"sync"
	"testing"
	"time"
)

// TestBatcherHandsOnAfterPanic: when the pipelines in flight panic, the
// calls queued behind them are still sent and answered, and no turn is
// lost.
func TestBatcherHandsOnAfterPanic(t *testing.T) {
	var b batcher
	release := make(chan struct{})
	started := make(chan struct{}, maxPipelines)
	var leaders sync.WaitGroup
	for range maxPipelines {
		leaders.Go(func() {
			defer func() { recover() }()
			b.do(&bothCall{wake: make(chan struct{})}, func([]*bothCall) {
				started <- struct{}{}
				<-release
				panic("the pipeline failed")
			})
		})
	}
	for range maxPipelines {
		<-started
	}
	const queued = 3
	done := make(chan *bothCall, queued)
	for range queued {
		go func() {
			c := &bothCall{wake: make(chan struct{})}
			b.do(c, func(batch []*bothCall) {
				for _, x := range batch {
					x.ok = true
				}
			})
			done <- c
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		b.mu.Lock()
		n := len(b.queue)
		b.mu.Unlock()
		if n == queued {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want %d", n, queued)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	for range queued {
		select {
		case c := <-done:
			if !c.ok {
				t.Error("a queued call returned unanswered")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a queued call never returned after the pipelines before it panicked")
		}
	}
	leaders.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running != 0 || len(b.queue) != 0 {
		t.Errorf("after every call: %d pipelines counted, %d calls queued; want none", b.running, len(b.queue))
	}
}
