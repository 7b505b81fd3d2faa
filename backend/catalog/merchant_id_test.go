package catalog

import (
	"errors"
	"strings"
	"testing"
)

// merchantIDFeed is a tab-separated feed of one item with id.
func merchantIDFeed(id string) string {
	return "id\ttitle\tlink\nITEM\ta\thttps://shop.example/a\n" + id + "\tb\thttps://shop.example/b\n"
}

// TestMerchantLongIDs: an id as long as Merchant Center allows, 50
// characters, loads whatever script it is written in, though escaping
// makes each of its letters six or nine bytes; an id of 51 such
// characters is refused, naming id.
func TestMerchantLongIDs(t *testing.T) {
	for _, c := range []struct {
		name, letter string
		bytes        int
	}{
		{"Cyrillic", "Ж", 6},
		{"CJK", "商", 9},
		{"outside the BMP", "𝄞", 12},
	} {
		id := strings.Repeat(c.letter, 50)
		ads, err := Load(strings.NewReader(merchantIDFeed(id)), "f.tsv", Options{Markets: []string{"de-DE"}})
		if err != nil || len(ads) != 2 {
			t.Errorf("%s: 50 characters: %d ads, %v", c.name, len(ads), err)
			continue
		}
		if got := ads[1].ID; got != merchantID(id) || len(got) != 50*c.bytes {
			t.Errorf("%s: id %q", c.name, got)
		}
		_, err = Load(strings.NewReader(merchantIDFeed(id+c.letter)), "f.tsv", Options{Markets: []string{"de-DE"}})
		var le *LineError
		if !errors.As(err, &le) || le.Field != "id" || le.Line != 3 || !strings.Contains(le.Msg, "50 characters") {
			t.Errorf("%s: 51 characters: %v, want an error on line 3 naming id and its 50 characters", c.name, err)
		}
	}
}

// TestMerchantLongIDsAsBefore: an id that loaded before ids could be
// longer loads as it did, spelt the same: an ASCII id of more than 50
// characters, and one escaped into 200 bytes.
func TestMerchantLongIDsAsBefore(t *testing.T) {
	ascii := strings.Repeat("SKU-", 40)     // 160 characters
	mixed := strings.Repeat("a", 176) + "Ä" // 177 characters, escaped into 182 bytes
	for _, id := range []string{ascii, mixed} {
		ads, err := Load(strings.NewReader(merchantIDFeed(id)), "f.tsv", Options{Markets: []string{"de-DE"}})
		if err != nil || len(ads) != 2 || ads[1].ID != merchantID(id) {
			t.Errorf("%q: %+v, %v", id, ads, err)
		}
	}
	_, err := Load(strings.NewReader(merchantIDFeed(strings.Repeat("x", 201))), "f.tsv", Options{Markets: []string{"de-DE"}})
	var le *LineError
	if !errors.As(err, &le) || le.Field != "id" {
		t.Errorf("201 ASCII characters: %v, want an error naming id", err)
	}
}
