package clicks_test

import (
	"testing"
	"time"
	// The zones' rules of the years below, on a host without a zone
	// database too.
	_ "time/tzdata"

	"github.com/adlink/adlink/backend/clicks"
)

// A budget day starts at the first instant of its date in the zone,
// whatever the clocks do at midnight: skip it (Santiago, Beirut), run it
// twice where they go back from 01:00 to 00:00 (Amman until 2021), or go
// back three hours just after it (Casey in 2019), at +14 and at -12 too.
func TestBudgetDayStartsAtTheFirstInstantOfItsDate(t *testing.T) {
	for _, name := range []string{"UTC", "America/Los_Angeles", "America/Santiago", "Asia/Beirut", "America/Havana",
		"Asia/Amman", "Asia/Gaza", "Antarctica/Casey", "Pacific/Kiritimati", "Etc/GMT+12", "Australia/Lord_Howe",
		"Pacific/Apia"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		from := clicks.BudgetDayIn(time.Date(2012, 1, 1, 0, 0, 0, 0, time.UTC), time.UTC)
		to := clicks.BudgetDayIn(time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC), time.UTC)
		bad := 0
		for d := from; d < to && bad < 3; d++ {
			s := d.Start(loc)
			if clicks.BudgetDayIn(s, loc) != d || clicks.BudgetDayIn(s.Add(-time.Minute), loc) >= d {
				bad++
				t.Errorf("%s: the day of %s starts at %s, %s a minute before",
					name, time.Unix(int64(d)*86400, 0).UTC().Format(time.DateOnly), s, s.Add(-time.Minute))
			}
		}
	}
	// Amman's clocks went back from 01:00 to 00:00 on 29 October 2021:
	// its day began at the first midnight, 21:00 UTC.
	amman, err := time.LoadLocation("Asia/Amman")
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2021, 10, 28, 21, 0, 0, 0, time.UTC)
	if got := clicks.BudgetDayIn(want, amman).Start(amman); !got.Equal(want) {
		t.Errorf("Amman's 29 October 2021 starts at %s, want %s", got.UTC(), want)
	}
}
