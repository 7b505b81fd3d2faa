package web

import "testing"

// TestPublishersNeverShareAnAddress: each publisher a test starts has an
// address no earlier one of the process had, also once the earlier ones
// have closed and the kernel gives their ports out again. A shared server
// answers a page it analysed by its URL: a new site at an old address
// would get an earlier test's answer for its first view.
func TestPublishersNeverShareAnAddress(t *testing.T) {
	seen := map[string]int{}
	for i := range 500 {
		srv := publisherServer(t, nil)
		if j, ok := seen[srv.URL]; ok {
			t.Errorf("publisher %d has the address of publisher %d, %s", i, j, srv.URL)
		}
		seen[srv.URL] = i
		srv.Close()
	}
}
