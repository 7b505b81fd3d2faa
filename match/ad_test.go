package match

import "testing"

func TestMarketString(t *testing.T) {
	for m, want := range map[Market]string{
		{Country: "de", Lang: "de"}: "de-DE",
		{Country: "ch"}:             "CH", // a country's own shard
	} {
		if got := m.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", m, got, want)
		}
		if back, ok := ParseMarket(want); m.Lang != "" && (!ok || back != m) {
			t.Errorf("ParseMarket(%q) = %v, %v", want, back, ok)
		}
	}
}
