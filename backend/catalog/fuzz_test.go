package catalog

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/adlink/adlink"
)

// seedLines returns a few lines of the demo catalog for the fuzz corpora.
func seedLines(n int) []string {
	lines := strings.Split(string(adlink.DemoCatalog), "\n")
	return lines[:min(n, len(lines))]
}

// FuzzLoadJSONL checks that no input crashes the JSON-lines reader and that
// whatever it accepts is valid and reads back the same after writing.
func FuzzLoadJSONL(f *testing.F) {
	f.Add([]byte(good + "\n"))
	f.Add([]byte(strings.Join(seedLines(3), "\n")))
	f.Add([]byte(`{"kind":"coupon","id":"A.1.1","title":"x","landing":"http://a.de","markets":["de-de"],"price":1.5,"currency":"eur"}`))
	f.Add([]byte("{}\n\n[1]\n\"x\"\nnull\n"))
	f.Add([]byte(`{"kind":"product","id":"A.1.1","title":"\u00fc\ud800","landing":"https://a.de","markets":["de-DE"],"bid":"0.000001"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ads, err := Load(bytes.NewReader(data), "fuzz.jsonl", Options{BaseURL: "https://adlink.example"})
		if err != nil {
			if ads != nil {
				t.Fatal("ads returned with an error")
			}
			return
		}
		if err := Validate(ads); err != nil {
			t.Fatalf("accepted ads are invalid: %v", err)
		}
		var b bytes.Buffer
		if err := WriteJSONL(&b, ads); err != nil {
			t.Fatal(err)
		}
		back, err := Load(&b, "back.jsonl", Options{})
		if err != nil {
			t.Fatalf("written feed does not load: %v\n%s", err, b.String())
		}
		if len(ads) > 0 && !reflect.DeepEqual(ads, back) {
			t.Fatalf("round trip changed the ads:\n%+v\n%+v", ads, back)
		}
	})
}

// FuzzLoadCSV does the same for the CSV reader.
func FuzzLoadCSV(f *testing.F) {
	f.Add([]byte("kind,id,title,landing,markets,price,currency,keywords\nproduct,A.1.1,Kühlschrank,https://a.de/,de-DE|en-GB,19.99,EUR,kühlschrank|fridge\n"))
	f.Add([]byte("id,kind,title,markets,landing,bid\nhandy-bestkauf.de,advertiser,\"Handys, gebraucht\",de-DE,https://handy-bestkauf.de/,0.45\n"))
	f.Add([]byte("\ufeffkind,id,title,landing,markets\nproduct,A.1.1,\"multi\nline\",https://a.de/,de-DE\n"))
	f.Add([]byte("kind,id\n\"unterminated\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ads, err := Load(bytes.NewReader(data), "fuzz.csv", Options{})
		if err != nil {
			if ads != nil {
				t.Fatal("ads returned with an error")
			}
			return
		}
		if err := Validate(ads); err != nil {
			t.Fatalf("accepted ads are invalid: %v", err)
		}
		var b bytes.Buffer
		if err := WriteCSV(&b, ads); err != nil {
			t.Fatal(err)
		}
		back, err := Load(&b, "back.csv", Options{})
		if err != nil {
			t.Fatalf("written feed does not load: %v\n%s", err, b.String())
		}
		if len(ads) > 0 && !reflect.DeepEqual(ads, back) {
			t.Fatalf("round trip changed the ads:\n%+v\n%+v", ads, back)
		}
	})
}
