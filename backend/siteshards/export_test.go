package siteshards

// EncodeShard is the body a Store keeps for sh.
var EncodeShard = encodeShard

// HoldLookups takes every slot of the store's reads until release.
func (s *Service) HoldLookups() (release func()) {
	for range cap(s.lookups) {
		s.lookups <- struct{}{}
	}
	return func() {
		for range cap(s.lookups) {
			<-s.lookups
		}
	}
}

// Waiting is how many requests wait for a read of the store.
func (s *Service) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.reading {
		n += l.waiting
	}
	return n
}

// WaitReads waits for the reads of the store under way.
func (s *Service) WaitReads() { s.readers.Wait() }

// Share writes sh to the store, as a build does.
func (s *Service) Share(sh *Shard) { s.share(sh) }
