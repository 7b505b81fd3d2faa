adlink.search("iphone 15 \uD800", {loc: "de", lang: "de"}).then(r => r.link.length)
