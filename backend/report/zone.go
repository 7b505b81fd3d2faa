package report

import (
	"strconv"
	"strings"
	"time"
)

// maxZoneName bounds the tz a request may name; the IANA names are under
// 40 bytes.
const maxZoneName = 64

// parseZone reads the tz parameter: an IANA time zone name, UTC when it
// is not given. "Local", the server's own zone, is no reader's, nor is
// "localtime", zoneinfo's link to it; a name is the zone's own spelling,
// words parted by single slashes ("Europe/./Berlin" is refused).
func parseZone(get func(string) string) (*time.Location, []Problem) {
	v := get("tz")
	if v == "" {
		return time.UTC, nil
	}
	if v != "Local" && v != "localtime" && len(v) <= maxZoneName && zoneSpelling(v) {
		if loc, err := time.LoadLocation(v); err == nil {
			return loc, nil
		}
	}
	if len(v) > maxZoneName {
		v = v[:maxZoneName] + "…"
	}
	return time.UTC, []Problem{{"tz", "tz must be an IANA time zone name such as Europe/Berlin or UTC, not " + strconv.Quote(v)}}
}

// zoneSpelling reports whether v is spelt as IANA zone names are: words
// of letters, digits, '_', '+' and '-' parted by single slashes.
func zoneSpelling(v string) bool {
	for _, w := range strings.Split(v, "/") {
		if w == "" {
			return false
		}
		for _, c := range w {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '+' || c == '-') {
				return false
			}
		}
	}
	return true
}

// localRange is the instants the days from..to (dates, to included) of
// loc cover: from the start of from to the start of the day after to, so
// a day a clock is set back has 25 hours and one it is set forward 23.
func localRange(from, to time.Time, loc *time.Location) (start, end time.Time) {
	return dayStart(from, loc), dayStart(to.AddDate(0, 0, 1), loc)
}

// dayStart is the first instant of the date of day (midnight UTC of it)
// in loc: its midnight, or where a clock set forward at midnight skips it
// (America/Santiago), the instant it was set forward. time.Date would
// give an instant of the day before. Where a clock set back to midnight
// shows it twice (Asia/Amman until 2022), it is the first: time.Date
// gives the second, and the day's first hour to the day before.
func dayStart(day time.Time, loc *time.Location) time.Time {
	y, m, d := day.Date()
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	if ty, tm, td := t.Date(); ty != y || tm != m || td != d {
		if _, end := t.ZoneBounds(); !end.IsZero() {
			t = end
		}
		return t
	}
	if start, _ := t.ZoneBounds(); !start.IsZero() {
		_, before := start.Add(-time.Second).Zone()
		_, after := t.Zone()
		// Midnight at the offset before the clock was set back.
		first := t.Add(time.Duration(after-before) * time.Second)
		if first.Before(start) && first.Hour() == 0 && first.Minute() == 0 && first.Second() == 0 {
			if fy, fm, fd := first.Date(); fy == y && fm == m && fd == d {
				t = first
			}
		}
	}
	return t
}

// zoneHours checks loc's offsets from UTC in [start, end): whole reports
// whether each is a whole number of hours (and if not, at is a time of
// one that is not, off its offset in seconds); utc whether each is 0, so
// that the zone's days are UTC days.
func zoneHours(loc *time.Location, start, end time.Time) (whole, utc bool, at time.Time, off int) {
	if loc == time.UTC {
		return true, true, time.Time{}, 0
	}
	utc = true
	// A zone's offset changes at most a few times a year, and never for
	// less than an hour: an hour's step finds each.
	for t := start; t.Before(end); t = t.Add(time.Hour) {
		_, o := t.In(loc).Zone()
		if o%3600 != 0 {
			return false, false, t, o
		}
		utc = utc && o == 0
	}
	return true, utc, time.Time{}, 0
}

// zoneProblem is the problem of a zone whose offset is not whole hours
// at some time of the range: reports sum hourly rollups, which cannot
// part such a zone's days.
func zoneProblem(loc *time.Location, at time.Time, off int) Problem {
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	h, m := off/3600, off%3600/60
	return Problem{"tz", "tz " + loc.String() + " is UTC" + sign + strconv.Itoa(h) + ":" + strconv.Itoa(100 + m)[1:] +
		" on " + at.In(loc).Format(time.DateOnly) + "; reports are kept by the hour, so tz must be a zone whole hours from UTC over the range"}
}

// zoneName is the name of loc as a request gave it (UTC by default).
func zoneName(loc *time.Location) string {
	if loc == nil {
		return "UTC"
	}
	return loc.String()
}

// ZoneName is the name of the report's time zone, "UTC" by default.
func (r *Request) ZoneName() string { return zoneName(r.Zone) }

// ZoneName is the name of the listing's time zone, "UTC" by default.
func (req *ClicksRequest) ZoneName() string { return zoneName(req.Zone) }
