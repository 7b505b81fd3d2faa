package app

import (
	"errors"
	"fmt"
	"strings"
)

// check refuses a catalog of ads ads, whose sources gave feeds, that came
// out empty, or lost more than the configured share of the ads of prev,
// the one served, or one of whose feeds did, against what it gave prev:
// more likely a truncated or broken export than a merchant's real
// change, and one merchant's feed may be a small part of the catalog.
func (l *live) check(prev *version, ads int, feeds []int) error {
	if ads == 0 {
		return errors.New("the new catalog is empty")
	}
	var problems []string
	if lost := len(prev.ads) - ads; l.dropped(len(prev.ads), lost) {
		problems = append(problems, fmt.Sprintf("the new catalog lost %d of the %d ads served, more than %g%%", lost, len(prev.ads), l.cfg.CatalogMaxDrop*100))
	}
	for i, n := range feeds {
		if i >= len(prev.feeds) || i >= len(l.sources) {
			break
		}
		before := prev.feeds[i]
		switch {
		case n == 0 && before > 0:
			problems = append(problems, fmt.Sprintf("%s: the feed came out empty, and had %d ads", l.sources[i].Name, before))
		case before-n >= minFeedLoss && l.dropped(before, before-n):
			problems = append(problems, fmt.Sprintf("%s: the feed lost %d of its %d ads, more than %g%%", l.sources[i].Name, before-n, before, l.cfg.CatalogMaxDrop*100))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// minFeedLoss is the fewest ads a feed must lose, beside its share, to
// be refused: a merchant of a handful of items who takes some off is
// making a real change far more often than a broken export, and a refusal
// holds back every other feed's changes until an operator forces it.
const minFeedLoss = 10

// dropped tells whether losing lost of before ads is more than
// -catalog-max-drop allows.
func (l *live) dropped(before, lost int) bool {
	return before > 0 && lost > 0 && float64(lost) > l.cfg.CatalogMaxDrop*float64(before)
}
