package testcatalog

// The vocabulary of Generate: product categories as shops in German- and
// English-speaking markets write them.

type genCategory struct {
	en, de       string   // the category as people write it
	enKW, deKW   []string // product keywords, shared by every ad of the category
	enNoun       []string // title nouns
	deNoun       []string
	enFeat       []string // "with ..." phrases for descriptions
	deFeat       []string // "mit ..." phrases (dative)
	brands       []string
	modelPrefix  []string
	minCents     int64
	maxCents     int64
	enShop       string // shop-name word for advertisers of the category
	deShop       string
	deBidPhrases []string
	enBidPhrases []string
}

var genCategories = []genCategory{
	{
		en: "headphones", de: "Kopfhörer",
		enKW: []string{"headphones", "headset"}, deKW: []string{"kopfhörer", "headset"},
		enNoun:      []string{"Wireless Headphones", "Over-Ear Headphones", "In-Ear Headphones", "Noise Cancelling Headphones"},
		deNoun:      []string{"Bluetooth-Kopfhörer", "Over-Ear-Kopfhörer", "In-Ear-Kopfhörer", "Kabellose Kopfhörer"},
		enFeat:      []string{"active noise cancelling", "30 h battery life", "Bluetooth 5.3", "USB-C charging", "a foldable design", "multipoint pairing"},
		deFeat:      []string{"aktiver Geräuschunterdrückung", "30 h Akkulaufzeit", "Bluetooth 5.3", "USB-C-Ladeanschluss", "faltbarem Design", "Multipoint-Verbindung"},
		brands:      []string{"Sony", "Bose", "Sennheiser", "JBL", "Beyerdynamic", "Audio-Technica", "AKG", "Jabra"},
		modelPrefix: []string{"WH", "QC", "HD", "TUNE", "DT", "ATH", "K", "ELITE"},
		minCents:    1999, maxCents: 39999, enShop: "audio", deShop: "kopfhoerer",
		deBidPhrases: []string{"kopfhörer kaufen", "bluetooth kopfhörer"}, enBidPhrases: []string{"buy headphones", "wireless headphones"},
	},
	{
		en: "smartphone", de: "Handy",
		enKW: []string{"smartphone", "phone", "cell phone"}, deKW: []string{"handy", "smartphone"},
		enNoun:      []string{"Smartphone", "5G Smartphone", "Unlocked Smartphone"},
		deNoun:      []string{"Smartphone", "5G-Smartphone", "Handy ohne Vertrag"},
		enFeat:      []string{"128 GB storage", "a 6.5-inch OLED display", "dual SIM", "a 50 MP camera", "a 5000 mAh battery", "fast charging"},
		deFeat:      []string{"128 GB Speicher", "6,5-Zoll-OLED-Display", "Dual-SIM", "50-MP-Kamera", "5000-mAh-Akku", "Schnellladefunktion"},
		brands:      []string{"Samsung", "Apple", "Xiaomi", "Motorola", "Nokia", "Google", "OnePlus", "Fairphone"},
		modelPrefix: []string{"SM-A", "SM-S", "XT", "TA-", "G", "CPH", "FP", "M"},
		minCents:    9900, maxCents: 149900, enShop: "phone", deShop: "handy",
		deBidPhrases: []string{"handy kaufen", "handy ohne vertrag"}, enBidPhrases: []string{"unlocked phones", "buy smartphone"},
	},
	{
		en: "laptop", de: "Laptop",
		enKW: []string{"laptop", "notebook"}, deKW: []string{"laptop", "notebook"},
		enNoun:      []string{"Laptop", "Notebook", "Ultrabook", "Gaming Laptop"},
		deNoun:      []string{"Laptop", "Notebook", "Ultrabook", "Gaming-Laptop"},
		enFeat:      []string{"16 GB RAM", "a 512 GB SSD", "a 14-inch display", "a backlit keyboard", "Wi-Fi 6", "a fingerprint reader"},
		deFeat:      []string{"16 GB RAM", "512 GB SSD", "14-Zoll-Display", "beleuchteter Tastatur", "Wi-Fi 6", "Fingerabdrucksensor"},
		brands:      []string{"Lenovo", "HP", "Dell", "Asus", "Acer", "Apple", "Microsoft", "MSI"},
		modelPrefix: []string{"T14", "X1", "EliteBook ", "Latitude ", "ZenBook UX", "Swift SF", "Surface ", "Modern "},
		minCents:    39900, maxCents: 249900, enShop: "laptop", deShop: "notebook",
		deBidPhrases: []string{"laptop kaufen", "notebook günstig"}, enBidPhrases: []string{"laptop deals", "buy laptop"},
	},
	{
		en: "fridge", de: "Kühlschrank",
		enKW: []string{"fridge", "refrigerator", "fridge freezer"}, deKW: []string{"kühlschrank", "kühl-gefrier-kombination"},
		enNoun:      []string{"Fridge Freezer", "Refrigerator", "Undercounter Fridge", "American Fridge Freezer"},
		deNoun:      []string{"Kühl-Gefrier-Kombination", "Kühlschrank", "Unterbau-Kühlschrank", "Side-by-Side-Kühlschrank"},
		enFeat:      []string{"NoFrost", "energy class D", "LED lighting", "a freezer compartment", "a quiet 35 dB motor", "a water dispenser"},
		deFeat:      []string{"NoFrost", "Energieeffizienzklasse D", "LED-Beleuchtung", "Gefrierfach", "leisen 35 dB", "Wasserspender"},
		brands:      []string{"Bosch", "Siemens", "Liebherr", "Samsung", "LG", "AEG", "Miele", "Beko"},
		modelPrefix: []string{"KGN", "KG", "CNd", "RB", "GBB", "RCB", "KFN", "B1RCNA"},
		minCents:    29900, maxCents: 199900, enShop: "appliance", deShop: "hausgeraete",
		deBidPhrases: []string{"kühlschrank kaufen", "kühlschrank günstig"}, enBidPhrases: []string{"fridge freezer deals", "buy fridge"},
	},
	{
		en: "football", de: "Fußball",
		enKW: []string{"football", "soccer ball"}, deKW: []string{"fußball", "ball"},
		enNoun:      []string{"Football", "Match Ball", "Training Ball"},
		deNoun:      []string{"Fußball", "Spielball", "Trainingsball"},
		enFeat:      []string{"size 5", "FIFA Quality Pro", "thermally bonded panels", "a butyl bladder"},
		deFeat:      []string{"Größe 5", "FIFA Quality Pro", "thermisch verschweißten Panels", "Butylblase"},
		brands:      []string{"Adidas", "Nike", "Puma", "Select", "Derbystar", "Uhlsport"},
		modelPrefix: []string{"HT", "DN", "0837", "Brillant ", "Apus ", "Elysia "},
		minCents:    1499, maxCents: 14999, enShop: "sport", deShop: "sport",
		deBidPhrases: []string{"fußball kaufen", "fußballschuhe"}, enBidPhrases: []string{"football boots", "soccer ball"},
	},
	{
		en: "tv", de: "Fernseher",
		enKW: []string{"tv", "television", "smart tv"}, deKW: []string{"fernseher", "tv", "smart tv"},
		enNoun:      []string{"4K Smart TV", "OLED TV", "QLED TV", "LED TV"},
		deNoun:      []string{"4K-Fernseher", "OLED-Fernseher", "QLED-Fernseher", "Smart-TV"},
		enFeat:      []string{"a 55-inch 4K panel", "HDR10+", "Dolby Vision", "120 Hz refresh", "three HDMI 2.1 ports"},
		deFeat:      []string{"55-Zoll-4K-Panel", "HDR10+", "Dolby Vision", "120 Hz", "drei HDMI-2.1-Anschlüssen"},
		brands:      []string{"Samsung", "LG", "Sony", "Philips", "Panasonic", "TCL", "Hisense"},
		modelPrefix: []string{"GQ55Q", "OLED55C", "XR-55A", "55PUS", "TX-55L", "55C", "55U"},
		minCents:    29900, maxCents: 299900, enShop: "tv", deShop: "tv",
		deBidPhrases: []string{"fernseher kaufen", "4k fernseher"}, enBidPhrases: []string{"tv deals", "4k tv"},
	},
	{
		en: "washing machine", de: "Waschmaschine",
		enKW: []string{"washing machine", "washer"}, deKW: []string{"waschmaschine", "waschvollautomat"},
		enNoun:      []string{"Washing Machine", "Front Loader", "Washer Dryer"},
		deNoun:      []string{"Waschmaschine", "Frontlader", "Waschtrockner"},
		enFeat:      []string{"an 8 kg drum", "1400 rpm spin", "a steam programme", "energy class A", "a quick 15 min wash"},
		deFeat:      []string{"8 kg Fassungsvermögen", "1400 U/min", "Dampfprogramm", "Energieeffizienzklasse A", "15-Minuten-Kurzprogramm"},
		brands:      []string{"Bosch", "Siemens", "Miele", "AEG", "Samsung", "Beko", "Bauknecht"},
		modelPrefix: []string{"WGG", "WM14", "WWD", "L7FE", "WW80", "B3WFU", "W8"},
		minCents:    34900, maxCents: 129900, enShop: "appliance", deShop: "waschmaschinen",
		deBidPhrases: []string{"waschmaschine kaufen", "waschmaschine angebot"}, enBidPhrases: []string{"washing machine deals"},
	},
	{
		en: "coffee machine", de: "Kaffeemaschine",
		enKW: []string{"coffee machine", "espresso machine", "bean to cup"}, deKW: []string{"kaffeemaschine", "kaffeevollautomat"},
		enNoun:      []string{"Bean to Cup Coffee Machine", "Espresso Machine", "Coffee Maker"},
		deNoun:      []string{"Kaffeevollautomat", "Espressomaschine", "Kaffeemaschine"},
		enFeat:      []string{"a milk frother", "a ceramic grinder", "one-touch cappuccino", "15 bar pressure", "a 1.8 l tank"},
		deFeat:      []string{"Milchaufschäumer", "Keramikmahlwerk", "One-Touch-Cappuccino", "15 bar Druck", "1,8-l-Wassertank"},
		brands:      []string{"De'Longhi", "Jura", "Siemens", "Philips", "Melitta", "Krups"},
		modelPrefix: []string{"ECAM", "E", "TE6", "EP", "F", "EA"},
		minCents:    4999, maxCents: 149900, enShop: "coffee", deShop: "kaffee",
		deBidPhrases: []string{"kaffeevollautomat kaufen", "kaffeemaschine"}, enBidPhrases: []string{"coffee machine deals"},
	},
	{
		en: "running shoes", de: "Laufschuhe",
		enKW: []string{"running shoes", "trainers", "sneakers"}, deKW: []string{"laufschuhe", "sneaker", "turnschuhe"},
		enNoun:      []string{"Running Shoes", "Trail Running Shoes", "Road Running Shoes"},
		deNoun:      []string{"Laufschuhe", "Trailrunning-Schuhe", "Straßenlaufschuhe"},
		enFeat:      []string{"a cushioned midsole", "breathable mesh", "reflective details", "a grippy outsole"},
		deFeat:      []string{"gedämpfter Zwischensohle", "atmungsaktivem Mesh", "reflektierenden Details", "griffiger Laufsohle"},
		brands:      []string{"Nike", "Adidas", "Asics", "Brooks", "New Balance", "Saucony", "Hoka", "Puma"},
		modelPrefix: []string{"Pegasus ", "Ultraboost ", "Gel-Nimbus ", "Ghost ", "880v", "Ride ", "Clifton ", "Velocity "},
		minCents:    5999, maxCents: 19999, enShop: "running", deShop: "laufschuh",
		deBidPhrases: []string{"laufschuhe kaufen", "laufschuhe damen"}, enBidPhrases: []string{"running shoes sale"},
	},
	{
		en: "vacuum cleaner", de: "Staubsauger",
		enKW: []string{"vacuum cleaner", "hoover", "vacuum"}, deKW: []string{"staubsauger", "akkusauger"},
		enNoun:      []string{"Cordless Vacuum Cleaner", "Robot Vacuum", "Bagless Vacuum Cleaner"},
		deNoun:      []string{"Akku-Staubsauger", "Saugroboter", "Beutelloser Staubsauger"},
		enFeat:      []string{"a HEPA filter", "60 min runtime", "a bagless design", "an LED floor head", "app control"},
		deFeat:      []string{"HEPA-Filter", "60 Minuten Laufzeit", "beutellosem Design", "LED-Bodendüse", "App-Steuerung"},
		brands:      []string{"Dyson", "Miele", "Bosch", "Philips", "Rowenta", "iRobot", "Roborock"},
		modelPrefix: []string{"V", "Triflex HX", "BCS", "XC", "RH", "Roomba ", "S"},
		minCents:    9900, maxCents: 89900, enShop: "home", deShop: "staubsauger",
		deBidPhrases: []string{"staubsauger kaufen", "akkusauger test"}, enBidPhrases: []string{"cordless vacuum deals"},
	},
	{
		en: "camera", de: "Kamera",
		enKW: []string{"camera", "mirrorless camera", "digital camera"}, deKW: []string{"kamera", "systemkamera", "digitalkamera"},
		enNoun:      []string{"Mirrorless Camera", "DSLR Camera", "Compact Camera"},
		deNoun:      []string{"Systemkamera", "Spiegelreflexkamera", "Kompaktkamera"},
		enFeat:      []string{"a 24 MP sensor", "4K video", "in-body stabilisation", "a flip screen", "dual card slots"},
		deFeat:      []string{"24-MP-Sensor", "4K-Video", "Bildstabilisator", "Klappdisplay", "zwei Kartenslots"},
		brands:      []string{"Canon", "Nikon", "Sony", "Fujifilm", "Panasonic", "OM System"},
		modelPrefix: []string{"EOS R", "Z", "ILCE-", "X-T", "DC-G", "OM-"},
		minCents:    29900, maxCents: 299900, enShop: "camera", deShop: "foto",
		deBidPhrases: []string{"systemkamera kaufen", "kamera angebote"}, enBidPhrases: []string{"camera deals"},
	},
	{
		en: "smartwatch", de: "Smartwatch",
		enKW: []string{"smartwatch", "fitness tracker"}, deKW: []string{"smartwatch", "fitnessuhr"},
		enNoun:      []string{"Smartwatch", "GPS Running Watch", "Fitness Tracker"},
		deNoun:      []string{"Smartwatch", "GPS-Laufuhr", "Fitnesstracker"},
		enFeat:      []string{"GPS", "heart rate monitoring", "an AMOLED display", "7-day battery life", "contactless payments"},
		deFeat:      []string{"GPS", "Herzfrequenzmessung", "AMOLED-Display", "7 Tagen Akkulaufzeit", "kontaktlosem Bezahlen"},
		brands:      []string{"Apple", "Samsung", "Garmin", "Fitbit", "Amazfit", "Huawei", "Polar"},
		modelPrefix: []string{"Watch S", "SM-R", "Forerunner ", "Versa ", "GTR ", "Watch GT ", "Pacer "},
		minCents:    4999, maxCents: 79900, enShop: "wearables", deShop: "uhren",
		deBidPhrases: []string{"smartwatch kaufen"}, enBidPhrases: []string{"smartwatch deals"},
	},
	{
		en: "printer", de: "Drucker",
		enKW: []string{"printer", "all-in-one printer"}, deKW: []string{"drucker", "multifunktionsdrucker"},
		enNoun:      []string{"All-in-One Printer", "Laser Printer", "Inkjet Printer"},
		deNoun:      []string{"Multifunktionsdrucker", "Laserdrucker", "Tintenstrahldrucker"},
		enFeat:      []string{"duplex printing", "Wi-Fi", "a 250-sheet tray", "an automatic document feeder", "mobile printing"},
		deFeat:      []string{"Duplexdruck", "WLAN", "250-Blatt-Papierfach", "automatischem Vorlageneinzug", "Mobildruck"},
		brands:      []string{"HP", "Canon", "Epson", "Brother", "Kyocera"},
		modelPrefix: []string{"LaserJet M", "PIXMA TS", "EcoTank ET-", "MFC-L", "ECOSYS M"},
		minCents:    6900, maxCents: 59900, enShop: "office", deShop: "buero",
		deBidPhrases: []string{"drucker kaufen", "druckerpatronen"}, enBidPhrases: []string{"printer ink", "buy printer"},
	},
	{
		en: "speaker", de: "Lautsprecher",
		enKW: []string{"speaker", "bluetooth speaker"}, deKW: []string{"lautsprecher", "bluetooth lautsprecher", "box"},
		enNoun:      []string{"Bluetooth Speaker", "Smart Speaker", "Portable Speaker", "Soundbar"},
		deNoun:      []string{"Bluetooth-Lautsprecher", "Smart Speaker", "Tragbarer Lautsprecher", "Soundbar"},
		enFeat:      []string{"IP67 waterproofing", "20 h playtime", "multiroom audio", "voice control", "deep bass"},
		deFeat:      []string{"IP67-Wasserschutz", "20 h Spielzeit", "Multiroom-Audio", "Sprachsteuerung", "kräftigem Bass"},
		brands:      []string{"JBL", "Bose", "Sonos", "Marshall", "Ultimate Ears", "Teufel", "Sony"},
		modelPrefix: []string{"Flip ", "SoundLink ", "Era ", "Emberton ", "BOOM ", "Boomster ", "SRS-XB"},
		minCents:    2999, maxCents: 89900, enShop: "sound", deShop: "hifi",
		deBidPhrases: []string{"bluetooth box", "lautsprecher kaufen"}, enBidPhrases: []string{"bluetooth speaker deals"},
	},
	{
		en: "drill", de: "Bohrmaschine",
		enKW: []string{"drill", "cordless drill", "power tools"}, deKW: []string{"bohrmaschine", "akkuschrauber", "werkzeug"},
		enNoun:      []string{"Cordless Drill Driver", "Hammer Drill", "Combi Drill"},
		deNoun:      []string{"Akku-Bohrschrauber", "Schlagbohrmaschine", "Bohrhammer"},
		enFeat:      []string{"two 18 V batteries", "a brushless motor", "60 Nm torque", "a carry case", "an LED work light"},
		deFeat:      []string{"zwei 18-V-Akkus", "bürstenlosem Motor", "60 Nm Drehmoment", "Transportkoffer", "LED-Arbeitslicht"},
		brands:      []string{"Bosch", "Makita", "Metabo", "DeWalt", "Einhell", "Ryobi"},
		modelPrefix: []string{"GSR 18V-", "DHP", "BS 18 L", "DCD", "TE-CD 18/", "R18PD"},
		minCents:    4999, maxCents: 39999, enShop: "tools", deShop: "werkzeug",
		deBidPhrases: []string{"akkuschrauber kaufen", "bohrmaschine"}, enBidPhrases: []string{"power tools deals"},
	},
}

var (
	genColoursEN = []string{"Black", "White", "Silver", "Blue", "Grey", "Red", "Green", "Beige"}
	genColoursDE = []string{"Schwarz", "Weiß", "Silber", "Blau", "Grau", "Rot", "Grün", "Beige"}
	genAdjEN     = []string{"Compact", "Lightweight", "Premium", "Robust", "Elegant", "Powerful", "Quiet", "Efficient"}
	genAdjDE     = []string{"kompakt", "leicht", "hochwertig", "robust", "elegant", "leistungsstark", "leise", "sparsam"}
	// Shop-name words; with a category word and a suffix they make domains
	// such as "technik-audio-24.shop.example".
	genShopWordsDE = []string{"technik", "elektro", "profi", "discount", "markt", "welt", "express", "direkt"}
	genShopWordsEN = []string{"tech", "depot", "direct", "outlet", "hub", "zone", "world", "express"}
)

// genRegion is where an advertiser sells: its markets and currency.
type genRegion struct {
	german   bool
	currency string
	markets  []string
}

var genRegions = []genRegion{
	{german: true, currency: "EUR", markets: []string{"de-DE", "de-AT", "de-CH"}},
	{german: true, currency: "CHF", markets: []string{"de-CH"}},
	{german: false, currency: "USD", markets: []string{"en-US", "en-CA"}},
	{german: false, currency: "GBP", markets: []string{"en-GB", "en-IE"}},
	{german: false, currency: "EUR", markets: []string{"en-IE"}},
	{german: false, currency: "CAD", markets: []string{"en-CA"}},
	{german: false, currency: "AUD", markets: []string{"en-AU"}},
}

// genRegionWeights picks regions: German and US markets are the largest.
var genRegionWeights = []int{40, 5, 25, 18, 4, 4, 4}
