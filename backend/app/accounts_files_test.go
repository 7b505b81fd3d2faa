package app

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// What an operator may leave at an accounts file's path: each fails the
// reload naming the file once and saying what is wrong, and the accounts
// served stay until the file is whole again.

// TestReloadNamesABadFileOnce: a partners file deleted, a directory, one
// over the size bound, empty, with more after its object, a named pipe or
// a device: the reload fails with exactly that message, the partners
// served stay, and the file made whole is served.
func TestReloadNamesABadFileOnce(t *testing.T) {
	s := startAccounts(t, twoPartners, budgetOf("100.00", ""))
	p := s.partners
	one := keyTwoOnly("key-two-report-token-0123")
	for _, c := range []struct {
		name  string
		leave func(t *testing.T)
		want  string
	}{
		{"deleted", func(t *testing.T) { remove(t, p) }, "no such file or directory"},
		{"a directory", func(t *testing.T) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "is a directory"},
		{"over the bound", func(t *testing.T) {
			remove(t, p)
			writeFile(t, p, []byte(one))
			// Sparse: the size alone refuses it, nothing is read.
			if err := os.Truncate(p, maxAccountFileBytes+1); err != nil {
				t.Fatal(err)
			}
		}, fmt.Sprintf("%d bytes, more than the %d an accounts file may have", maxAccountFileBytes+1, maxAccountFileBytes)},
		{"empty", func(t *testing.T) { writeFile(t, p, nil) }, `empty; want {"partners":[...]}`},
		{"two objects", func(t *testing.T) { writeFile(t, p, []byte(one+one)) },
			fmt.Sprintf(`more after the object that ends at byte %d; want one {"partners":[...]}`, len(one))},
		// Opened, a named pipe would wait for a writer, holding the reload.
		{"a named pipe", func(t *testing.T) {
			remove(t, p)
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "is no regular file but a named pipe"},
		{"a device", func(t *testing.T) {
			remove(t, p)
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}, "is no regular file but a device"},
	} {
		c.leave(t)
		status, r := s.reload(t)
		want := "partners file " + p + ": " + c.want + "; the partners served stay"
		if status != http.StatusBadGateway || r.Partners != "failed" || r.Advertisers != "" || r.AccountsError != want {
			t.Errorf("the partners file %s: %d %+v\nwant 502, the partners failed: %q", c.name, status, r, want)
		}
		if st := readyz(t, s.App); st.LastRefresh == nil || st.LastRefresh.AccountsError != want {
			t.Errorf("the partners file %s: /readyz %+v, want %q", c.name, st.LastRefresh, want)
		}
		if status, _ := s.search(t, "key-one", "site-one", "handy-bestkauf.de"); status != http.StatusOK {
			t.Errorf("the partners file %s: key-one %d, want the partners served to stay", c.name, status)
		}
	}
	writeFile(t, p, []byte(one))
	if status, r := s.reload(t); status != http.StatusOK || r.Partners != "swapped" || r.AccountsError != "" {
		t.Errorf("the partners file whole again: %d %+v", status, r)
	}
	if status, _ := s.search(t, "key-one", "site-one", "handy-bestkauf.de"); status != http.StatusUnauthorized {
		t.Errorf("key-one, removed by the whole file: %d, want 401", status)
	}
}

// TestReloadReadsAFileWrittenInPlace: an advertisers file rewritten in
// place rather than renamed over, read empty, then half written: each
// fails and the budget served holds; written out, it is served.
func TestReloadReadsAFileWrittenInPlace(t *testing.T) {
	s := startAccounts(t, twoPartners, budgetOf("100.00", ""))
	whole := budgetOf("50.00", "")
	for _, b := range []string{"", whole[:len(whole)/2], whole} {
		if err := os.WriteFile(s.advertisers, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
		status, r := s.reload(t)
		budget, _ := s.Catalog().Accounts.Budget("handy-bestkauf.de")
		if b == whole {
			if status != http.StatusOK || r.Advertisers != "swapped" || budget.DailyMicros != 50_000_000 {
				t.Errorf("the file written out: %d %+v, budget %+v; want 50.00 served", status, r, budget)
			}
			continue
		}
		if status != http.StatusBadGateway || r.Advertisers != "failed" || budget.DailyMicros != 100_000_000 {
			t.Errorf("the file read at %d bytes: %d %+v, budget %+v; want it failed, 100.00 served", len(b), status, r, budget)
		}
		wantKept(t, fmt.Sprintf("the file read at %d bytes", len(b)), r, "advertisers", s.advertisers, "failed", "advertisers file "+s.advertisers+": ")
	}
}

// TestNewNamesAnUnreadableFileOnce: at start-up too, a file that cannot
// be read is named once, with what is wrong.
func TestNewNamesAnUnreadableFileOnce(t *testing.T) {
	cfg := testConfig(t)
	cfg.Demo = false
	cfg.PartnersFile = filepath.Join(t.TempDir(), "partners.json")
	want := "partners file " + cfg.PartnersFile + ": no such file or directory"
	if _, err := New(cfg, Options{}); err == nil || err.Error() != want {
		t.Errorf("New = %v, want %q", err, want)
	}
}

// remove removes the file or empty directory at path.
func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// TestReloadKeepsTheBudgetsPastNoList: an advertisers file that is null
// or {} (a template's missing value) fails, rather than lifting every
// budget; one that lists no advertisers is served.
func TestReloadKeepsTheBudgetsPastNoList(t *testing.T) {
	s := startAccounts(t, twoPartners, budgetOf("100.00", ""))
	for _, b := range []string{"null", "{}"} {
		writeFile(t, s.advertisers, []byte(b))
		status, r := s.reload(t)
		want := "advertisers file " + s.advertisers + `: no "advertisers" list; want {"advertisers":[...]}; the advertisers served stay`
		if status != http.StatusBadGateway || r.Advertisers != "failed" || r.AccountsError != want {
			t.Errorf("the advertisers file %s: %d %+v, want %q", b, status, r, want)
		}
		if budget, ok := s.Catalog().Accounts.Budget("handy-bestkauf.de"); !ok || budget.DailyMicros != 100_000_000 {
			t.Errorf("the advertisers file %s: budget %+v %v, want 100.00 served", b, budget, ok)
		}
	}
	writeFile(t, s.advertisers, []byte(`{"advertisers":[]}`))
	if status, r := s.reload(t); status != http.StatusOK || r.Advertisers != "swapped" {
		t.Errorf("no advertisers listed: %d %+v, want them swapped", status, r)
	}
	if budget, ok := s.Catalog().Accounts.Budget("handy-bestkauf.de"); ok {
		t.Errorf("no advertisers listed: budget %+v, want none", budget)
	}
}
